import { Component, h } from './preact.js';
import htm from './htm.js';
import { api, get, session } from './api.js';
import { time } from './format.js';
import { attempt, ConfirmButton, inlineError, loadError } from './forms.js';

const html = htm.bind(h);

// Local tokens and pairing (docs/api.md "Local tokens", "Pairing"); every route here needs an admin token. A new
// token's secret is in the POST's answer only: it is shown once, in a read-only field with a copy button, and
// dropped from the page's state when the person says they have it or leaves the view.

const POLL_MS = 5_000;
const SCOPES = [
  { scope: 'inference', what: 'call models (the OpenAI-style and Anthropic-style routes)' },
  { scope: 'read', what: 'read settings, usage and everything this dashboard shows' },
  { scope: 'manage', what: 'change providers, models, Gauge and services' },
  { scope: 'admin', what: 'everything, tokens and pairing included' },
];
const EMPTY_FORM = { name: '', scopes: ['inference'] };

export class TokensView extends Component {
  state = { data: null, error: null, errors: {}, busy: null, form: EMPTY_FORM, created: null, copied: null };

  componentDidMount() {
    this.load();
    this.poll = setInterval(() => this.loadPairing(), POLL_MS);
  }
  componentWillUnmount() {
    clearInterval(this.poll);
  }

  async load() {
    try {
      const [tokens, pairing] = await Promise.all([get('/v1/tokens'), get('/v1/pairing/requests')]);
      this.setState({ error: null, data: { tokens: tokens.data, pairing: pairing.data } });
    } catch (err) {
      this.failLoad(err);
    }
  }

  /** Pairing requests come and go by themselves: they are read again every few seconds. */
  async loadPairing() {
    if (!this.state.data) return;
    try {
      const pairing = await get('/v1/pairing/requests');
      this.setState({ data: { ...this.state.data, pairing: pairing.data } });
    } catch (err) {
      this.failLoad(err);
    }
  }

  failLoad(err) {
    if (err.status === 403)
      this.setState({
        error: 'Tokens and pairing need an admin token. Sign out and sign in with one (`switchyard token` prints it).',
      });
    else this.setState({ error: loadError(err) });
  }

  toggleScope = (scope, on) => {
    const scopes = this.state.form.scopes.filter((s) => s !== scope);
    this.setState({ form: { ...this.state.form, scopes: on ? [...scopes, scope] : scopes } });
  };

  create = async (event) => {
    event.preventDefault();
    const { name, scopes } = this.state.form;
    const order = SCOPES.map((s) => s.scope);
    const body = { name: name.trim(), scopes: [...scopes].sort((a, b) => order.indexOf(a) - order.indexOf(b)) };
    const answer = await attempt(this, 'create', () => api('POST', '/v1/tokens', body));
    if (!answer) return;
    this.setState({
      form: EMPTY_FORM,
      created: { id: answer.token.id, name: answer.token.name, secret: answer.secret },
    });
    await this.load();
  };

  copy = async () => {
    const secret = this.state.created?.secret;
    if (!secret) return;
    try {
      if (!navigator.clipboard?.writeText) throw new Error('no clipboard');
      await navigator.clipboard.writeText(secret);
      this.setState({ copied: 'copied' });
    } catch {
      // Without the clipboard API (an insecure origin, a refused permission): select it for Ctrl+C.
      this.secretField?.focus();
      this.secretField?.select();
      this.setState({ copied: 'selected' });
    }
  };

  done = () => this.setState({ created: null, copied: null });

  revoke = async (t) => {
    if (await attempt(this, t.id, () => api('DELETE', `/v1/tokens/${encodeURIComponent(t.id)}`))) await this.load();
  };

  decide = async (r, verb) => {
    if (await attempt(this, r.id, () => api('POST', `/v1/pairing/requests/${encodeURIComponent(r.id)}/${verb}`, {})))
      await this.load();
  };

  render(_props, { data, error }) {
    return html`<section class="view tokens" data-view-ready=${data ? 'true' : 'false'}>
      <div class="toolbar"><h2>Tokens</h2>
        <button type="button" class="secondary" onClick=${() => this.load()}>Reload</button></div>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      ${
        data
          ? html`${this.createdBox()} ${this.pairingSection(data.pairing)} ${this.list(data.tokens)}
            ${this.createForm()}`
          : !error && html`<p class="loading">Loading...</p>`
      }
    </section>`;
  }

  createdBox() {
    const { created, copied } = this.state;
    if (!created) return null;
    return html`<div class="notice secret-box" data-secret-for=${created.id}>
      <div>
        <p><strong>The secret of ${created.name}.</strong> Copy it now: it is shown this once and cannot be read
          again.</p>
        <div class="secret">
          <input type="text" readonly value=${created.secret} aria-label="The new token's secret" spellcheck="false"
            autocomplete="off" ref=${(el) => {
              this.secretField = el;
            }} onFocus=${(e) => e.currentTarget.select()} />
          <button type="button" data-action="copy" onClick=${this.copy}>Copy</button>
          <button type="button" class="secondary" data-action="done" onClick=${this.done}>Done</button>
        </div>
        <p class="small" role="status">${
          copied === 'copied'
            ? 'Copied to the clipboard.'
            : copied === 'selected'
              ? 'The browser does not allow copying from here: the secret is selected, press Ctrl+C (or Cmd+C).'
              : ''
        }</p>
      </div>
    </div>`;
  }

  pairingSection(requests) {
    const { errors, busy } = this.state;
    return html`<h3>Pairing requests</h3>
      ${
        requests.length === 0
          ? html`<p class="empty" data-empty="pairing">No app is asking for a token. When one pairs (the dashboard's
            "Pair this browser", or an app that supports pairing), its request shows here to approve or deny; check
            that the code matches the one the app shows.</p>`
          : html`<div class="scroll"><table class="list" data-chart="pairing">
            <thead><tr><th>App</th><th>Code</th><th>Scopes</th><th>Expires</th><th></th></tr></thead>
            <tbody>${requests.map(
              (r) => html`<tr data-pairing=${r.id}>
                <td>${r.clientName}${inlineError(errors[r.id])}</td><td><code>${r.userCode}</code></td>
                <td>${r.scopes.join(', ')}</td><td>${time(r.expiresAt)}</td>
                <td><div class="actions">
                  <button type="button" data-action="approve" disabled=${busy === r.id}
                    onClick=${() => this.decide(r, 'approve')}>Approve</button>
                  <button type="button" class="secondary" data-action="deny" disabled=${busy === r.id}
                    onClick=${() => this.decide(r, 'deny')}>Deny</button>
                </div></td>
              </tr>`,
            )}</tbody>
          </table></div>`
      }`;
  }

  list(tokens) {
    const { errors, busy } = this.state;
    const mine = session.token() ?? '';
    return html`<h3>Tokens</h3>
      ${
        tokens.length === 0
          ? html`<p class="empty" data-empty="tokens">No tokens. Create one below for each app that calls the
            service.</p>`
          : html`<div class="scroll"><table class="list" data-chart="tokens">
            <thead><tr><th>Name</th><th>Scopes</th><th>Starts with</th><th>Created</th><th>Last used</th>
              <th>Expires</th><th></th></tr></thead>
            <tbody>${tokens.map(
              (t) => html`<tr data-token=${t.id}>
                <td>${t.name}${
                  mine.startsWith(t.prefix) ? html` <span class="badge ok">this tab</span>` : ''
                }${inlineError(errors[t.id])}</td>
                <td>${t.scopes.join(', ')}</td><td><code>${t.prefix}...</code></td>
                <td class="small">${time(t.createdAt)}</td><td class="small">${time(t.lastUsedAt)}</td>
                <td class="small">${t.expiresAt ? time(t.expiresAt) : 'never'}</td>
                <td><${ConfirmButton} label="Revoke" action="revoke" question=${`Revoke ${t.name}?`}
                  confirm="Yes, revoke" disabled=${busy === t.id} onConfirm=${() => this.revoke(t)} /></td>
              </tr>`,
            )}</tbody>
          </table></div>`
      }`;
  }

  createForm() {
    const { form, errors, busy } = this.state;
    return html`<h3>Create a token</h3>
      <form class="setup" data-form="create-token" onSubmit=${this.create}>
        <label for="t-name">Name</label>
        <input id="t-name" type="text" required maxlength="100" placeholder="e.g. laptop agents" value=${form.name}
          onInput=${(e) => this.setState({ form: { ...form, name: e.currentTarget.value } })} />
        <fieldset class="stack">
          <legend>Scopes</legend>
          ${SCOPES.map(
            (s) => html`<label title=${s.what}><input type="checkbox" name="scope" value=${s.scope}
              checked=${form.scopes.includes(s.scope)}
              onChange=${(e) => this.toggleScope(s.scope, e.currentTarget.checked)} /> ${s.scope}${' '}
              <span class="muted small">(${s.what})</span></label>`,
          )}
        </fieldset>
        <div class="wide"><button type="submit" disabled=${busy === 'create'}>Create token</button></div>
        <div class="wide">${inlineError(errors.create)}</div>
      </form>`;
  }
}
