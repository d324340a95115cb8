// Work that must not hold up an answer: the per-request log lines and the usage report. An answer is written
// in the microtasks that follow its worker message; a task queued here runs after them, in the same
// event-loop turn (setImmediate), so it neither delays the answer nor waits for the next request. The adapter
// (server.ts) also starts writes here: by then uWS has parsed every request that arrived with them.

let queue: (() => void)[] = [];

function run(): void {
  const tasks = queue;
  queue = [];
  for (const task of tasks) {
    try {
      task();
    } catch (err) {
      // A log line or usage report that fails must not take the gateway down with it, nor the tasks after it.
      console.error('switchyard: a task after the answers failed:', err);
    }
  }
}

export function afterAnswers(task: () => void): void {
  if (queue.length === 0) setImmediate(run);
  queue.push(task);
}
