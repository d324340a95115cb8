import { Component, h } from './preact.js';
import htm from './htm.js';
import { api, get } from './api.js';
import { countdown, num, usd } from './format.js';
import { attempt, ConfirmButton, inlineError, loadError } from './forms.js';

const html = htm.bind(h);

// Enforced limits (docs/api.md "Limits"): what each scope may use in a window, refused (429) before a call goes
// upstream once it would pass. Each limit's use in its current window as a bar (used, then the worst cases of
// calls in flight, against the max), when it resets; switched on or off, its max changed, removed; a form adds
// one. Its scope, window and metric are fixed once made. Read again every 10 s while shown.

const POLL_MS = 10_000;
const SCOPES = {
  token: { label: 'A local token', id: 'Token ID', hint: 'The ID the Tokens view shows (tok_...).' },
  service_account: { label: 'A service account', id: 'Service account ID', hint: null },
  session: {
    label: 'Agent sessions',
    id: 'Session ID',
    hint: 'Empty: a counter for each session (Claude Code, Codex and X-Session-Id name theirs).',
    optional: true,
  },
  route_pack: { label: 'A route pack', id: 'Route pack slug', hint: 'Calls to @route/<slug>.' },
  credential: {
    label: 'A provider key',
    id: 'Credential ID',
    hint: 'Calls made with one of a provider\u2019s keys: its ID in the Providers view (key_...).',
  },
  service: { label: 'The whole service (every call)', id: null, hint: null },
};
const WINDOWS = { minute: 'Minute', hour: 'Hour', day: 'Day', week: 'Week (from Monday)', month: 'Month' };
const METRICS = {
  usd: 'Dollars',
  requests: 'Requests',
  total_tokens: 'Total tokens',
  input_tokens: 'Input tokens',
  output_tokens: 'Output tokens',
};
const EMPTY_FORM = { name: '', kind: 'token', id: '', window: 'day', metric: 'usd', max: '', enabled: true };
const SESSIONS_SHOWN = 3;

/** A figure in the limit's unit. */
const amount = (metric, n) => (metric === 'usd' ? usd(n) : metric === 'gauge_percent' ? `${Math.round(n)}%` : num(n));
const unitWords = (metric) =>
  metric === 'usd' ? 'USD' : metric === 'gauge_percent' ? '% of the window' : metric.replace('_', ' ');
/** Dollars to the cent; requests and tokens whole. */
const minOf = (metric) => (metric === 'usd' ? '0.01' : '1');
const perSession = (l) => l.scope.kind === 'session' && l.scope.id === null;

function scopeWords(scope) {
  if (scope.kind === 'service') return 'Every call';
  if (perSession({ scope })) return 'Each session';
  return `${SCOPES[scope.kind]?.id ?? scope.kind}: ${scope.id}`;
}

/** `Token ID: tok_1; at most $5.00 a day`, `Each session; at most 60 requests an hour`. */
function ruleWords(l) {
  if (l.window === 'gauge')
    return `${scopeWords(l.scope)}; at ${l.max}% of Gauge window ${l.gauge.accountId} ${l.gauge.windowId}, ${
      l.gauge.stops === 'new_sessions' ? 'new sessions stop' : 'every call stops'
    }`;
  const unit = l.metric === 'usd' ? '' : ` ${unitWords(l.metric)}`;
  const per = `${l.window === 'hour' ? 'an' : 'a'} ${l.window}`;
  return `${scopeWords(l.scope)}; at most ${amount(l.metric, l.max)}${unit} ${per}`;
}

/** Used and reserved against the max, as one bar of two parts. */
function UseBar({ metric, max, used, reserved }) {
  const share = (n) => Math.max(0, Math.min(100, (100 * n) / max));
  const u = share(used);
  const r = Math.min(share(reserved), 100 - u);
  const level = u >= 90 ? 'high' : u >= 70 ? 'mid' : 'low';
  const words = `${amount(metric, used)} of ${amount(metric, max)} used, ${amount(metric, reserved)} reserved`;
  return html`<span class=${`usebar ${level}`} role="meter" aria-valuemin="0" aria-valuemax=${max}
    aria-valuenow=${Math.min(used, max)} aria-label=${words} title=${words}>
    <span class="used" style=${{ width: `${u.toFixed(1)}%` }}></span>
    <span class="reserved" style=${{ width: `${r.toFixed(1)}%` }}></span>
  </span>`;
}

const figures = (l, c) =>
  `${amount(l.metric, c.used)} / ${amount(l.metric, l.max)} (${Math.round((100 * c.used) / l.max)}%)` +
  (c.reserved > 0 ? `, ${amount(l.metric, c.reserved)} reserved` : '');

/** One counter: its bar, `$0.12 / $5.00 (2%)`, what calls in flight reserve, when the window ends. */
function Counter({ limit, counter, label }) {
  const { used, reserved, resetsAt } = counter;
  return html`<div class="counter" data-key=${counter.key ?? ''} data-used=${used} data-reserved=${reserved}
    data-resets=${resetsAt}>
    ${label && html`<div class="small">${label}</div>`}
    <${UseBar} metric=${limit.metric} max=${limit.max} used=${used} reserved=${reserved} />
    <div class="small">${figures(limit, counter)}<span class="muted">, resets in ${countdown(resetsAt)}</span></div>
  </div>`;
}

function Use({ limit }) {
  if (perSession(limit)) {
    if (limit.counters.length === 0) return html`<span class="muted small">No session has used it this window.</span>`;
    const more = limit.counters.length - SESSIONS_SHOWN;
    return html`${limit.counters
      .slice(0, SESSIONS_SHOWN)
      .map((c) => html`<${Counter} limit=${limit} counter=${c} label=${`Session ${c.key}`} />`)}
      ${more > 0 && html`<span class="muted small">and ${more} more sessions</span>`}`;
  }
  const counter = limit.counters[0];
  if (!counter) return html`<span class="muted small">Not used this window.</span>`;
  return html`<${Counter} limit=${limit} counter=${counter} />`;
}

export class LimitsView extends Component {
  state = { data: null, error: null, errors: {}, busy: null, form: EMPTY_FORM, editing: null, draft: '' };

  componentDidMount() {
    this.load();
  }
  componentWillUnmount() {
    clearTimeout(this.poll);
  }

  load = async () => {
    clearTimeout(this.poll);
    try {
      const [answer, brake, paused] = await Promise.all([
        get('/v1/limits'),
        get('/v1/limits/loop-brake'),
        get('/v1/limits/sessions'),
      ]);
      this.setState({ data: answer.data, brake, paused: paused.data, error: null });
      this.poll = setTimeout(this.load, POLL_MS);
    } catch (err) {
      this.setState({ error: loadError(err) });
    }
  };

  field = (name) => (e) => this.setState({ form: { ...this.state.form, [name]: e.currentTarget.value } });
  pickKind = (e) => this.setState({ form: { ...this.state.form, kind: e.currentTarget.value, id: '' } });

  add = async (event) => {
    event.preventDefault();
    const { form } = this.state;
    const scope = { kind: form.kind };
    if (SCOPES[form.kind].id && form.id.trim()) scope.id = form.id.trim();
    const body = {
      name: form.name.trim(),
      scope,
      window: form.window,
      metric: form.metric,
      max: Number(form.max),
      enabled: form.enabled,
    };
    if (!(await attempt(this, 'add', () => api('POST', '/v1/limits', body)))) return;
    this.setState({ form: { ...EMPTY_FORM, kind: form.kind, window: form.window, metric: form.metric } });
    await this.load();
  };

  patch = async (l, body) => {
    if (!(await attempt(this, l.id, () => api('PATCH', `/v1/limits/${encodeURIComponent(l.id)}`, body)))) return false;
    await this.load();
    return true;
  };

  editMax = (l) => {
    this.setState({ editing: l.id, draft: String(l.max) });
    setTimeout(() => document.getElementById(`max-${l.id}`)?.focus(), 0);
  };
  saveMax = async (event, l) => {
    event.preventDefault();
    if (await this.patch(l, { max: Number(this.state.draft) })) this.setState({ editing: null });
  };

  remove = async (l) => {
    if (await attempt(this, l.id, () => api('DELETE', `/v1/limits/${encodeURIComponent(l.id)}`))) await this.load();
  };

  render(_props, { data, error }) {
    return html`<section class="view limits" data-view-ready=${data ? 'true' : 'false'}>
      <div class="toolbar"><h2>Limits</h2>
        <button type="button" class="secondary" onClick=${this.load}>Reload</button></div>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      ${
        data
          ? html`${this.list(data)} ${this.addForm()} ${this.brake()}`
          : !error && html`<p class="loading">Loading...</p>`
      }
    </section>`;
  }

  list(limits) {
    const { errors, busy } = this.state;
    if (limits.length === 0)
      return html`<p class="empty" data-empty="limits">No limits. A limit stops a runaway agent before its calls go
        upstream: add one below.</p>`;
    return html`<div class="scroll"><table class="list" data-chart="limits">
      <thead><tr><th>Limit</th><th>Use this window</th><th>Enabled</th><th></th></tr></thead>
      <tbody>${limits.map(
        (l) => html`<tr data-limit=${l.id} data-enabled=${String(l.enabled)} data-max=${l.max}>
          <td class="limit-name"><strong>${l.name}</strong>
            <div class="muted small">${ruleWords(l)}</div>
            ${inlineError(errors[l.id])}</td>
          <td class="use"><${Use} limit=${l} /></td>
          <td><input type="checkbox" data-action="enable" checked=${l.enabled} disabled=${busy === l.id}
            aria-label=${`${l.name} enabled`} onChange=${(e) => this.patch(l, { enabled: e.currentTarget.checked })} />
          </td>
          <td>${this.actions(l)}</td>
        </tr>`,
      )}</tbody>
    </table></div>`;
  }

  actions(l) {
    const { editing, draft, busy } = this.state;
    if (editing === l.id)
      return html`<form class="inline" data-form="max" onSubmit=${(e) => this.saveMax(e, l)}>
        <input id=${`max-${l.id}`} type="number" required min=${minOf(l.metric)} step=${minOf(l.metric)}
          aria-label=${`New max for ${l.name} (${unitWords(l.metric)})`} value=${draft}
          onInput=${(e) => this.setState({ draft: e.currentTarget.value })} />
        <button type="submit" disabled=${busy === l.id}>Save</button>
        <button type="button" class="secondary" onClick=${() => this.setState({ editing: null })}>Cancel</button>
      </form>`;
    return html`<div class="actions">
      <button type="button" class="secondary" data-action="edit-max"
        onClick=${() => this.editMax(l)}>Change max</button>
      <${ConfirmButton} label="Remove" action="remove" question=${`Remove ${l.name}?`} confirm="Yes, remove"
        disabled=${busy === l.id} onConfirm=${() => this.remove(l)} />
    </div>`;
  }

  toggleBrake = async () => {
    const body = { enabled: !this.state.brake.enabled };
    if (await attempt(this, 'brake', () => api('PATCH', '/v1/limits/loop-brake', body))) await this.load();
  };

  resume = async (p) => {
    const path = `/v1/limits/sessions/${encodeURIComponent(p.session)}/resume`;
    if (await attempt(this, `s:${p.session}`, () => api('POST', path))) await this.load();
  };

  /** The loop brake: on or off, and the sessions it paused, each with a Resume button. */
  brake() {
    const { brake, paused, errors, busy } = this.state;
    return html`<h3>Loop brake</h3>
      <p data-brake=${brake.enabled ? 'on' : 'off'}>${brake.enabled ? 'On' : 'Off'}: a session that sends the same
        tool call with the same arguments ${brake.repeats} times within ${brake.windowSeconds} s is paused until
        resumed here. <button type="button" class="secondary" data-action="brake" disabled=${busy === 'brake'}
        onClick=${this.toggleBrake}>${brake.enabled ? 'Turn off' : 'Turn on'}</button></p>
      ${inlineError(errors.brake)}
      ${
        paused.length === 0
          ? html`<p class="muted small" data-empty="paused">No session is paused.</p>`
          : html`<table class="list" data-chart="paused">
              <thead><tr><th>Session</th><th>Repeated</th><th></th></tr></thead>
              <tbody>${paused.map(
                (p) => html`<tr data-session=${p.session}><td>${p.session}</td>
                  <td>${p.tool} x ${p.repeats}${inlineError(errors[`s:${p.session}`])}</td>
                  <td><button type="button" data-action="resume" disabled=${busy === `s:${p.session}`}
                    onClick=${() => this.resume(p)}>Resume</button></td></tr>`,
              )}</tbody></table>`
      }`;
  }

  addForm() {
    const { form, errors, busy } = this.state;
    const scope = SCOPES[form.kind];
    return html`<h3>Add a limit</h3>
      <form class="setup" data-form="add-limit" onSubmit=${this.add}>
        <label for="l-name">Name</label>
        <input id="l-name" type="text" required maxlength="200" value=${form.name} onInput=${this.field('name')} />
        <label for="l-kind">Applies to</label>
        <select id="l-kind" value=${form.kind} onChange=${this.pickKind}>
          ${Object.entries(SCOPES).map(([v, s]) => html`<option value=${v}>${s.label}</option>`)}
        </select>
        ${
          scope.id &&
          html`<label for="l-id">${scope.id}${scope.optional && html` <span class="muted">(optional)</span>`}</label>
          <input id="l-id" type="text" required=${!scope.optional} maxlength="128" spellcheck="false"
            pattern="[A-Za-z0-9._:@\\-]+" title="Letters, digits and . _ : @ -" value=${form.id}
            onInput=${this.field('id')} />`
        }
        ${scope.hint && html`<p class="hint wide">${scope.hint}</p>`}
        <label for="l-window">Window</label>
        <select id="l-window" value=${form.window} onChange=${this.field('window')}>
          ${Object.entries(WINDOWS).map(([v, label]) => html`<option value=${v}>${label}</option>`)}
        </select>
        <label for="l-metric">Counts</label>
        <select id="l-metric" value=${form.metric} onChange=${this.field('metric')}>
          ${Object.entries(METRICS).map(([v, label]) => html`<option value=${v}>${label}</option>`)}
        </select>
        <label for="l-max">Max (${unitWords(form.metric)})</label>
        <input id="l-max" type="number" required min=${minOf(form.metric)} step=${minOf(form.metric)}
          value=${form.max} onInput=${this.field('max')} />
        <label class="wide"><input type="checkbox" checked=${form.enabled}
          onChange=${(e) => this.setState({ form: { ...form, enabled: e.currentTarget.checked } })} /> Enabled</label>
        <p class="hint wide">Minute and hour windows are UTC; day, week and month the service's local time. A call
          reserves its worst case before it goes upstream, and is refused (429) when that does not fit.</p>
        <div class="wide"><button type="submit" disabled=${busy === 'add'}>Add limit</button></div>
        <div class="wide">${inlineError(errors.add)}</div>
      </form>`;
  }
}
