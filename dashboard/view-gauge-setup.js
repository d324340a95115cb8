import { Component, h } from './preact.js';
import htm from './htm.js';
import { api, get } from './api.js';
import { attempt, ConfirmButton, inlineError, loadError } from './forms.js';
import { AlertRules, Budgets } from './gauge-money-forms.js';

const html = htm.bind(h);

// Gauge set-up (docs/api.md "Gauge", "Gauge auth sessions", "Gauge budgets", "Gauge alerts"): connect an account
// with its key (write-only, as a provider's) or, for GitHub Copilot, through the device flow the service runs;
// switch the local-log and status-page sources; budgets and alert rules (gauge-money-forms.js). All of it is
// set-up: it works while Gauge is off.

const KEY_HINTS = {
  openai: 'An OpenAI Admin key (sk-admin-...), which can read the organization\u2019s usage and costs.',
  anthropic: 'An Anthropic Admin key (sk-ant-admin...), which can read the organization\u2019s usage and costs.',
  openrouter: 'An OpenRouter API key: Gauge reads its credit limit and usage.',
  'github-copilot': 'A fine-grained personal access token with the account permission "Plan: read-only".',
};
const SOURCE_WORDS = {
  local_logs: 'reads the agent\u2019s own log files on this machine',
  status: 'reads the provider\u2019s public status page (over the internet)',
};
const FINAL = new Set(['succeeded', 'failed', 'expired', 'cancelled']);
const EMPTY_FORM = { providerId: '', label: '', key: '', baseUrl: '' };

/** The auth mode a pasted key is for (`admin_key` or `api_key`), or null. */
const keyMode = (p) => p.authModes.find((m) => m === 'admin_key' || m === 'api_key') ?? null;

export class GaugeSetupView extends Component {
  state = { data: null, error: null, errors: {}, busy: null, form: EMPTY_FORM, session: null };

  componentDidMount() {
    this.load();
  }
  componentWillUnmount() {
    clearTimeout(this.sessionPoll);
  }

  load = async () => {
    try {
      const [settings, providers, accounts, sources, budgets, rules, records] = await Promise.all([
        get('/v1/settings'),
        get('/v1/gauge/providers'),
        get('/v1/gauge/accounts'),
        get('/v1/gauge/sources'),
        get('/v1/gauge/budgets'),
        get('/v1/gauge/alert-rules'),
        get('/v1/providers'),
      ]);
      const connectable = providers.data.filter((p) => p.connectable && keyMode(p));
      const form = this.state.form.providerId ? this.state.form : { ...EMPTY_FORM, providerId: connectable[0]?.id };
      this.setState({
        error: null,
        form,
        data: {
          enabled: settings.gauge.enabled,
          providers: providers.data,
          connectable,
          accounts: accounts.data,
          sources: sources.data,
          budgets: budgets.data,
          rules: rules.data,
          providerRecords: records.data,
        },
      });
    } catch (err) {
      this.setState({ error: loadError(err) });
    }
  };

  setGauge = async (enabled) => {
    if (await attempt(this, 'gauge', () => api('PATCH', '/v1/settings', { gauge: { enabled } }))) await this.load();
  };

  field = (name) => (e) => this.setState({ form: { ...this.state.form, [name]: e.currentTarget.value } });

  connect = async (event) => {
    event.preventDefault();
    const { providerId, label, key, baseUrl } = this.state.form;
    const provider = this.state.data.connectable.find((p) => p.id === providerId);
    if (!provider) return;
    const body = { providerId, authMode: keyMode(provider), credential: key };
    if (label.trim()) body.label = label.trim();
    if (baseUrl.trim()) body.config = { baseUrl: baseUrl.trim() };
    this.setState({ form: { ...this.state.form, key: '' } });
    if (!(await attempt(this, 'connect', () => api('POST', '/v1/gauge/accounts', body)))) return;
    this.setState({ form: { ...EMPTY_FORM, providerId } });
    await this.load();
  };

  patchAccount = async (a, change) => {
    const path = `/v1/gauge/accounts/${encodeURIComponent(a.id)}`;
    if (await attempt(this, a.id, () => api('PATCH', path, change))) await this.load();
  };

  removeAccount = async (a) => {
    const path = `/v1/gauge/accounts/${encodeURIComponent(a.id)}`;
    if (await attempt(this, a.id, () => api('DELETE', path))) await this.load();
  };

  setSource = async (s, enabled) => {
    const path = `/v1/gauge/sources/${encodeURIComponent(s.id)}`;
    if (await attempt(this, s.id, () => api('PUT', path, { enabled }))) await this.load();
  };

  /** The device flow: the service asks the provider for a code, the person types it at the provider's page. */
  startDeviceFlow = async (providerId) => {
    const session = await attempt(this, 'device', () =>
      api('POST', '/v1/gauge/auth-sessions', { providerId, authMode: 'oauth_device' }),
    );
    if (!session) return;
    this.setState({ session });
    this.watchSession(session);
  };

  watchSession(session) {
    clearTimeout(this.sessionPoll);
    if (FINAL.has(session.state)) {
      if (session.state === 'succeeded') void this.load();
      return;
    }
    this.sessionPoll = setTimeout(async () => {
      try {
        const next = await get(`/v1/gauge/auth-sessions/${encodeURIComponent(session.id)}`);
        if (this.state.session?.id !== next.id) return;
        this.setState({ session: next });
        this.watchSession(next);
      } catch (err) {
        this.setState({ session: { ...session, state: 'failed', failure: { message: loadError(err) } } });
      }
    }, 1000);
  }

  cancelDeviceFlow = async () => {
    const { session } = this.state;
    clearTimeout(this.sessionPoll);
    const path = `/v1/gauge/auth-sessions/${encodeURIComponent(session.id)}`;
    const answer = await attempt(this, 'device', () => api('DELETE', path));
    this.setState({ session: answer && answer !== true ? answer : null });
  };

  render(_props, { data, error }) {
    return html`<section class="view gauge-setup" data-view-ready=${data ? 'true' : 'false'}>
      <div class="toolbar"><h2>Gauge set-up</h2>
        <button type="button" class="secondary" onClick=${this.load}>Reload</button></div>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      ${
        data
          ? html`${this.status(data)} ${this.accounts(data)} ${this.connectForm(data)} ${this.sources(data)}
            <${Budgets} budgets=${data.budgets} providers=${data.providerRecords} accounts=${data.accounts}
              onDone=${this.load} />
            <${AlertRules} rules=${data.rules} budgets=${data.budgets} providers=${data.providers}
              accounts=${data.accounts} onDone=${this.load} />`
          : !error && html`<p class="loading">Loading...</p>`
      }
    </section>`;
  }

  status({ enabled }) {
    const { busy, errors } = this.state;
    return html`<div class="notice" data-gauge-enabled=${String(enabled)}>
      <p>${
        enabled
          ? 'Gauge is on: it collects readings from the accounts and sources below.'
          : 'Gauge is off: everything here can be set up meanwhile, and nothing is collected until it is on.'
      }</p>
      <button type="button" class=${enabled ? 'secondary' : ''} data-action="gauge" disabled=${busy === 'gauge'}
        onClick=${() => this.setGauge(!enabled)}>${enabled ? 'Turn Gauge off' : 'Turn Gauge on'}</button>
      ${inlineError(errors.gauge)}
    </div>`;
  }

  accounts({ accounts, providers }) {
    const { errors, busy } = this.state;
    const mine = accounts.filter((a) => !a.builtIn);
    const name = (id) => providers.find((p) => p.id === id)?.displayName ?? id;
    return html`<h3>Accounts</h3>
      ${
        mine.length === 0
          ? html`<p class="empty" data-empty="accounts">No account connected. Connect one below with its key to see
            its quota, spend and credits in Gauge.</p>`
          : html`<div class="scroll"><table class="list" data-chart="gauge-accounts">
            <thead><tr><th>Account</th><th>Provider</th><th>Key</th><th>Collection</th><th>Enabled</th><th></th>
              </tr></thead>
            <tbody>${mine.map(
              (a) => html`<tr data-account=${a.id} data-enabled=${String(a.enabled)}
                data-key=${a.credentialConfigured ? 'stored' : 'none'}>
                <td>${a.label}${inlineError(errors[a.id])}</td><td>${name(a.providerId)}
                  <span class="muted small">${a.authMode === 'oauth_device' ? '(device flow)' : ''}</span></td>
                <td>${a.credentialConfigured ? 'stored' : 'none'}</td>
                <td><span class=${`badge ${a.status.collection}`}>${a.status.collection}</span>${
                  a.status.auth === 'failed' ? html` <span class="badge failing">key refused</span>` : ''
                }</td>
                <td><label class="switch"><input type="checkbox" checked=${a.enabled} data-action="enable"
                  aria-label=${`${a.label} enabled`} disabled=${busy === a.id}
                  onChange=${(e) => this.patchAccount(a, { enabled: e.currentTarget.checked })} /> ${
                    a.enabled ? 'on' : 'off'
                  }</label></td>
                <td><${ConfirmButton} label="Remove" action="remove" question=${`Remove ${a.label}?`}
                  confirm="Yes, remove" disabled=${busy === a.id} onConfirm=${() => this.removeAccount(a)} /></td>
              </tr>`,
            )}</tbody>
          </table></div>`
      }`;
  }

  connectForm({ connectable, providers }) {
    const { form, errors, busy } = this.state;
    const device = providers.filter((p) => p.authModes.includes('oauth_device'));
    return html`<h3>Connect an account</h3>
      <form class="setup" data-form="connect-account" onSubmit=${this.connect} autocomplete="off">
        <label for="g-provider">Provider</label>
        <select id="g-provider" value=${form.providerId} onChange=${this.field('providerId')}>
          ${connectable.map((p) => html`<option value=${p.id}>${p.displayName}</option>`)}
        </select>
        <label for="g-key">Key</label>
        <input id="g-key" type="password" autocomplete="off" spellcheck="false" required value=${form.key}
          onInput=${this.field('key')} />
        <p class="hint wide">${KEY_HINTS[form.providerId] ?? ''} Stored in the vault and never shown again.</p>
        <label for="g-label">Label <span class="muted">(optional)</span></label>
        <input id="g-label" type="text" maxlength="200" value=${form.label} onInput=${this.field('label')} />
        <label for="g-url">Base URL <span class="muted">(optional)</span></label>
        <input id="g-url" type="url" placeholder="the provider\u2019s public API" value=${form.baseUrl}
          spellcheck="false" onInput=${this.field('baseUrl')} />
        <div class="wide"><button type="submit" disabled=${busy === 'connect'}>Connect</button></div>
        <div class="wide">${inlineError(errors.connect)}</div>
      </form>
      ${device.map((p) => this.deviceFlow(p))}`;
  }

  deviceFlow(p) {
    const { session, busy, errors } = this.state;
    const mine = session?.providerId === p.id ? session : null;
    return html`<div class="notice device-flow" data-device-flow=${p.id}>
      <div>
        <p>${p.displayName} can also be connected without pasting a key: the service runs GitHub\u2019s device flow,
          you open GitHub\u2019s page and type the code shown here. It needs an OAuth app\u2019s client ID in the
          settings (<code>gauge.oauthClients</code>) and Gauge turned on.</p>
        ${
          mine && !FINAL.has(mine.state)
            ? html`<p data-session-state=${mine.state}>Open <a href=${mine.verificationUri} target="_blank"
              rel="noopener noreferrer">${mine.verificationUri}</a> and type <strong class="code">${
                mine.userCode
              }</strong>. Waiting for your approval...</p>
              <button type="button" class="secondary" onClick=${this.cancelDeviceFlow}>Cancel</button>`
            : html`${
                mine &&
                html`<p data-session-state=${mine.state} class=${mine.state === 'succeeded' ? 'ok' : 'error'}>${
                  mine.state === 'succeeded'
                    ? 'Connected: the account is in the list above.'
                    : mine.state === 'cancelled'
                      ? 'Cancelled.'
                      : `It did not connect: ${mine.failure?.message ?? mine.state}`
                }</p>`
              }
              <button type="button" class="secondary" data-action="device-flow" disabled=${busy === 'device'}
                onClick=${() => this.startDeviceFlow(p.id)}>Connect ${p.displayName} with the device flow</button>`
        }
        ${inlineError(errors.device)}
      </div>
    </div>`;
  }

  sources({ sources }) {
    const { errors, busy } = this.state;
    const shown = sources.filter((s) => SOURCE_WORDS[s.kind]);
    return html`<h3>Sources</h3>
      <p class="hint">Off until you switch them on: they read your files or reach the internet.</p>
      <div class="scroll"><table class="list" data-chart="gauge-sources">
        <thead><tr><th>Source</th><th>What it does</th><th>Enabled</th></tr></thead>
        <tbody>${shown.map(
          (s) => html`<tr data-source=${s.id} data-enabled=${String(s.enabled)}>
            <td>${s.label}${inlineError(errors[s.id])}</td><td class="small">${SOURCE_WORDS[s.kind]}</td>
            <td><label class="switch"><input type="checkbox" checked=${s.enabled} data-action="enable"
              aria-label=${`${s.label} enabled`} disabled=${busy === s.id}
              onChange=${(e) => this.setSource(s, e.currentTarget.checked)} /> ${s.enabled ? 'on' : 'off'}</label></td>
          </tr>`,
        )}</tbody>
      </table></div>`;
  }
}
