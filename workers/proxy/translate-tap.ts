import type { GatewayOp } from '../../protocol/gateway.ts';
import type { ProviderKind } from '../../protocol/providers.ts';
import { createUsageCollector } from './usage/collectors.ts';
import { contentBytesOf } from './usage/estimate.ts';
import { createSseSplitter, decodeSseBlock, parseSseBlock, type SseEvent } from '../shared/sse.ts';
import type { StreamTap } from './usage/stream-tap.ts';
import type { StreamMapper } from '../translate/types.ts';

// The stream tap of a translated call: the upstream's events are parsed one by one, metered by the
// upstream op's own collector (so usage is the provider's, counter for counter) and rewritten by the
// translator's mapper into the client's events. The untranslated relay never comes here.

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { ignoreBOM: true });

export function createTranslatingTap(
  upstreamOp: GatewayOp,
  mapper: StreamMapper,
  providerKind: ProviderKind,
): StreamTap {
  const collector = createUsageCollector(upstreamOp, { providerKind });
  let out = '';
  let content = 0;
  // Mappers read leniently; an event shaped like nothing they expect is skipped rather than thrown into
  // undici's data callback.
  const mapEvent = (event: SseEvent): string => {
    try {
      return mapper.push(event);
    } catch {
      return '';
    }
  };
  const splitter = createSseSplitter((block, whole, first) => {
    // A block over the splitter's limit arrives in pieces; no event of a chat or Messages stream is that large.
    if (!whole) return;
    content += contentBytesOf(upstreamOp, block);
    const { event } = decodeSseBlock(block, first);
    if (event === null) return;
    collector.event(event);
    out += mapEvent(event);
  });
  const take = (): Uint8Array | null => {
    if (out === '') return null;
    const bytes = encoder.encode(out);
    out = '';
    return bytes;
  };
  return {
    push(chunk) {
      splitter.push(chunk);
      return take();
    },
    end() {
      const rest = splitter.end();
      if (rest !== null) {
        // An unterminated last event is still the upstream's last word.
        const event = parseSseBlock(decoder.decode(rest));
        if (event !== null) {
          collector.event(event);
          out += mapEvent(event);
        }
      }
      out += mapper.end();
      return { tail: take(), usage: collector.result() };
    },
    responseId: () => null,
    closed: () => mapper.closed(),
    contentBytes: () => content,
  };
}
