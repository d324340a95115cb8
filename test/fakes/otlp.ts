import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

// A fake OTLP/HTTP collector on loopback: POST /v1/traces with the JSON encoding (the official
// exporter-trace-otlp-http sends `application/json`; the protobuf exporter is another package), decoded into
// flat spans. Tests wait on the spans that arrived, never on a clock.

export type AttributeValue = string | number | boolean;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Null for a root span. */
  parentSpanId: string | null;
  name: string;
  /** OTLP's SpanKind numbers: 1 INTERNAL, 3 CLIENT. */
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, AttributeValue>;
  /** OTLP's status code: 0 UNSET, 1 OK, 2 ERROR. */
  status: number;
  resource: Record<string, AttributeValue>;
}

export interface OtlpFake {
  /** `http://127.0.0.1:<port>/v1/traces`. */
  endpoint: string;
  spans: ReceivedSpan[];
  /** The headers of every export request, in order. */
  exports: IncomingHttpHeaders[];
  /** Resolves with the spans so far once `until` holds for them; rejects after `deadlineMs`. */
  waitFor(until: (spans: readonly ReceivedSpan[]) => boolean, deadlineMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; intValue?: number | string; doubleValue?: number; boolValue?: boolean };
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string | number;
  endTimeUnixNano: string | number;
  attributes?: OtlpAttribute[];
  status?: { code?: number };
}
interface OtlpRequest {
  resourceSpans: { resource?: { attributes?: OtlpAttribute[] }; scopeSpans: { spans: OtlpSpan[] }[] }[];
}

function attributeValue(v: OtlpAttribute['value']): AttributeValue {
  if (v.stringValue !== undefined) return v.stringValue;
  // int64 may come as a decimal string (the OTLP/JSON mapping); the counts in these tests fit a number.
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  throw new Error(`unexpected attribute value ${JSON.stringify(v)}`);
}

const attributesOf = (list: OtlpAttribute[] = []) =>
  Object.fromEntries(list.map((a) => [a.key, attributeValue(a.value)])) as Record<string, AttributeValue>;

// Nanoseconds since the epoch overflow a double's integers; milliseconds survive the division.
const msOf = (nanos: string | number) => Number(BigInt(nanos) / 1_000_000n);

export function decode(body: OtlpRequest): ReceivedSpan[] {
  return body.resourceSpans.flatMap((rs) => {
    const resource = attributesOf(rs.resource?.attributes);
    return rs.scopeSpans.flatMap((ss) =>
      ss.spans.map((s) => ({
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId ? s.parentSpanId : null,
        name: s.name,
        kind: s.kind,
        startMs: msOf(s.startTimeUnixNano),
        endMs: msOf(s.endTimeUnixNano),
        attributes: attributesOf(s.attributes),
        status: s.status?.code ?? 0,
        resource,
      })),
    );
  });
}

export async function start(): Promise<OtlpFake> {
  const spans: ReceivedSpan[] = [];
  const exports: IncomingHttpHeaders[] = [];
  const waiters = new Set<() => void>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      let raw = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') raw = gunzipSync(raw);
      if (!String(req.headers['content-type']).startsWith('application/json')) {
        res.writeHead(415).end();
        return;
      }
      exports.push(req.headers);
      spans.push(...decode(JSON.parse(raw.toString('utf8')) as OtlpRequest));
      // An ExportTraceServiceResponse with no partial success.
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      for (const w of [...waiters]) w();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}/v1/traces`,
    spans,
    exports,
    waitFor(until, deadlineMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!until(spans)) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve([...spans]);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`the spans wanted did not arrive within ${deadlineMs} ms (${spans.length} arrived)`));
        }, deadlineMs);
        waiters.add(check);
        check();
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
