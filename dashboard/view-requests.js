import { Component, h } from './preact.js';
import htm from './htm.js';
import { get, withQuery } from './api.js';
import { num } from './format.js';
import { loadError } from './forms.js';

const html = htm.bind(h);

// The request log (docs/api.md, Request log; admin only, opt in): the newest calls grouped by session, each
// session as a timeline of its calls (a bar from when the call arrived, as long as it took), and one call's whole
// entry, bodies included (JSON indented), on a click. Every value is a text node (htm escapes it), bodies in a <pre>.

const STATUSES = ['', 'ok', 'failed', 'aborted'];
const NO_SESSION = '(no session)';

/** The page's calls by session, each session's calls oldest first, the sessions by their newest call. */
export function bySession(items) {
  const groups = new Map();
  for (const item of items) {
    const key = item.session ?? NO_SESSION;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(item);
  }
  return [...groups].map(([session, calls]) => {
    calls.sort((a, b) => Date.parse(a.receivedAt) - Date.parse(b.receivedAt));
    const start = Date.parse(calls[0].receivedAt);
    const end = Math.max(...calls.map((c) => Date.parse(c.receivedAt) + c.durationMs));
    return { session, calls, start, span: Math.max(1, end - start) };
  });
}

const ms = (n) => (n === null || n === undefined ? '-' : `${num(n)} ms`);
const plural = (n, word) => `${num(n)} ${word}${n === 1 ? '' : 's'}`;

/** A JSON body indented to be read (it is kept as it came, on one line); any other text as it is. */
function readable(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function Timeline({ group, picked, onPick }) {
  return html`<div class="timeline" data-session=${group.session}>
    <h3>${group.session} <small>${plural(group.calls.length, 'call')}, ${ms(group.span)}</small></h3>
    ${group.calls.map((c) => {
      const left = ((Date.parse(c.receivedAt) - group.start) / group.span) * 100;
      const width = Math.max(0.5, (c.durationMs / group.span) * 100);
      const label = `${c.op} ${c.clientModel ?? c.modelId ?? ''}`;
      return html`<button type="button" class="timeline-row secondary" data-request=${c.id}
        aria-pressed=${c.id === picked ? 'true' : 'false'} onClick=${() => onPick(c.id)}>
        <span class="timeline-label" title=${label}>${label}</span>
        <span class="timeline-track"><span class=${`timeline-bar ${c.outcome}`}
          style=${{ left: `${left.toFixed(2)}%`, width: `${width.toFixed(2)}%` }}></span></span>
        <span class="timeline-meta">${c.status} ${c.outcome} ${ms(c.durationMs)}</span>
      </button>`;
    })}
  </div>`;
}

function Body({ label, body }) {
  const note = body.omitted ?? (body.truncated ? `first part of ${num(body.bytes)} bytes` : `${num(body.bytes)} bytes`);
  const text = body.text === null ? '(not kept)' : body.truncated ? body.text : readable(body.text);
  return html`<h4>${label} <small>${note}</small></h4><pre class="body">${text}</pre>`;
}

// One string: htm drops whitespace that holds a line break, which joined words across the template's lines.
const summary = (e) =>
  `${e.method} ${e.path} (${e.op}): ${e.clientModel ?? '-'} to ${e.modelId ?? '-'} on ${e.providerId ?? '-'}; ` +
  `${e.outcome}, ${e.status}${e.error ? `, ${e.error.code}` : ''}; first byte ${ms(e.firstByteMs)}, ` +
  `took ${ms(e.durationMs)}; tokens ${e.usage ? num(e.usage.totalTokens) : '-'}`;

function Detail({ entry, onClose }) {
  const headers = (hs) =>
    html`<dl class="headers">${Object.entries(hs).map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}</dl>`;
  return html`<div class="request-detail" data-request-detail=${entry.id} tabindex="-1">
    <div class="toolbar">
      <h3>${entry.id}</h3>
      <button type="button" class="secondary" onClick=${onClose}>Close</button>
    </div>
    <p class="request-summary">${summary(entry)}</p>
    <h4>Request headers</h4>${headers(entry.request.headers)}
    <${Body} label="Request body" body=${entry.request.body} />
    <h4>Response headers</h4>${headers(entry.response.headers)}
    <${Body} label="Response body" body=${entry.response.body} />
  </div>`;
}

export class RequestsView extends Component {
  state = { filter: { session: '', model: '', status: '' }, page: null, entry: null, error: null };

  componentDidMount() {
    this.load();
  }

  async load() {
    const { session, model, status } = this.state.filter;
    const query = { limit: 200 };
    if (session) query.session = session;
    if (model) query.model = model;
    if (status) query.status = status;
    try {
      this.setState({ page: await get(withQuery('/v1/requests', query)), error: null });
    } catch (err) {
      this.setState({ error: this.failure(err), page: null });
    }
  }

  failure(err) {
    if (err.status === 403)
      return (
        "The request log needs an admin token: it holds every caller's prompts and answers. Sign out and sign in " +
        'with one (`switchyard token` prints it).'
      );
    return loadError(err);
  }

  /** A call picked far down the list: its entry, shown above the timelines, is brought into view. */
  componentDidUpdate(_props, before) {
    if (this.state.entry && this.state.entry !== before.entry) this.base?.querySelector('.request-detail')?.focus();
  }

  pick = async (id) => {
    try {
      this.setState({ entry: await get(`/v1/requests/${encodeURIComponent(id)}`), error: null });
    } catch (err) {
      this.setState({ error: this.failure(err) });
    }
  };

  set = (key) => (e) => this.setState({ filter: { ...this.state.filter, [key]: e.currentTarget.value } });

  submit = (e) => {
    e.preventDefault();
    this.load();
  };

  render(_props, { filter, page, entry, error }) {
    return html`<section class="view requests" data-view-ready=${page ? 'true' : 'false'}>
      <div class="toolbar"><h2>Requests</h2></div>
      <form class="request-filters" role="search" onSubmit=${this.submit}>
        <input type="search" name="session" placeholder="Session" aria-label="Session" value=${filter.session}
          onInput=${this.set('session')} />
        <input type="search" name="model" placeholder="Model" aria-label="Model" value=${filter.model}
          onInput=${this.set('model')} />
        <select name="status" aria-label="Outcome" value=${filter.status} onChange=${this.set('status')}>
          ${STATUSES.map((s) => html`<option value=${s}>${s || 'any outcome'}</option>`)}
        </select>
        <button type="submit">Search</button>
      </form>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      ${entry && html`<${Detail} entry=${entry} onClose=${() => this.setState({ entry: null })} />`}
      ${page && this.list(page)}
      ${!page && !error && html`<p class="loading">Loading...</p>`}
    </section>`;
  }

  list(page) {
    if (page.data.length === 0)
      return html`<p class="empty" data-empty="requests">
        No requests logged. The log is off unless <code>requestLog.enabled</code>${' or '}
        <code>requestLog.tokenIds</code> is set (PATCH /v1/settings).
      </p>`;
    const picked = this.state.entry?.id;
    const timeline = (g) => html`<${Timeline} group=${g} picked=${picked} onPick=${this.pick} />`;
    return html`${bySession(page.data).map(timeline)}
      ${page.nextCursor && html`<p class="more">Older calls: narrow the search.</p>`}`;
  }
}
