// The events a `generate: false` call gets (Codex CLI sends one when it connects, to warm the connection): its
// response is created and completed at once, with no output; nothing goes upstream and nothing is metered.

export function prewarmEvents(response: Record<string, unknown>, lane: string): string[] {
  const tag = lane === '' ? {} : { stream_id: lane };
  return [
    JSON.stringify({
      type: 'response.created',
      sequence_number: 0,
      response: { ...response, status: 'in_progress' },
      ...tag,
    }),
    JSON.stringify({ type: 'response.completed', sequence_number: 1, response, ...tag }),
  ];
}
