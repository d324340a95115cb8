// Work that must not hold up an answer: the per-request log lines and the usage report. An answer is written
// in the microtasks that follow its worker message; a task queued here runs after them, in the same
// event-loop turn (setImmediate), so it neither delays the answer nor waits for the next request.

let queue: (() => void)[] = [];

function run(): void {
  const tasks = queue;
  queue = [];
  let failure: { err: unknown } | null = null;
  for (const task of tasks) {
    try {
      task();
    } catch (err) {
      failure ??= { err };
    }
  }
  // Every task ran; a failure is then as uncaught as it was where the task came from.
  if (failure !== null) throw failure.err;
}

export function afterAnswers(task: () => void): void {
  if (queue.length === 0) setImmediate(run);
  queue.push(task);
}
