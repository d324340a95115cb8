import assert from 'node:assert/strict';

/** Parses Responses SSE text into its events, checking each frame's `event:` names its data's `type`. */
export function responsesEvents(text: string): Record<string, any>[] {
  return text
    .split('\n\n')
    .filter((frame) => frame !== '')
    .map((frame) => {
      const [head, data] = frame.split('\n');
      const event = JSON.parse(data!.slice('data: '.length)) as Record<string, any>;
      assert.equal(head, `event: ${String(event.type)}`);
      return event;
    });
}
