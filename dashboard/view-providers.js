import { Component, h } from './preact.js';
import htm from './htm.js';
import { api, get } from './api.js';
import { attempt, ConfirmButton, inlineError, loadError } from './forms.js';
import { ProviderKeys } from './provider-keys.js';

const html = htm.bind(h);

// Providers (docs/api.md "Providers"): the list, and add / enable / disable / test / remove. The key is
// write-only: typed once into a password field, sent in the POST, then dropped from the page's state; the list
// says only how many are stored (`credentials`). "Keys" opens a provider's keys under its row (provider-keys.js).
// Default addresses are written without their scheme: no file of the page names another host's URL
// (test/edge/routes/dashboard.test.ts).

export const KINDS = [
  { kind: 'openai', label: 'OpenAI', url: 'api.openai.com/v1', key: 'required' },
  { kind: 'anthropic', label: 'Anthropic', url: 'api.anthropic.com', key: 'required' },
  { kind: 'openrouter', label: 'OpenRouter', url: 'openrouter.ai/api/v1', key: 'required' },
  {
    kind: 'openai_compatible',
    label: 'OpenAI-compatible server (vLLM, LM Studio, ...)',
    url: null,
    key: 'optional',
    hint: 'The server\u2019s /v1 address with http or https in front, such as 127.0.0.1:8000/v1.',
  },
  { kind: 'ollama', label: 'Ollama', url: '127.0.0.1:11434', key: 'optional' },
  { kind: 'llamacpp', label: 'llama.cpp server (llama-server)', url: '127.0.0.1:8080', key: 'optional' },
  { kind: 'embedded', label: 'Embedded llama.cpp (GGUF files in the models folder)', url: undefined, key: 'none' },
];
const kindOf = (kind) => KINDS.find((k) => k.kind === kind) ?? { kind, label: kind, key: 'optional' };

const EMPTY_FORM = { kind: 'openai', id: '', baseUrl: '', name: '', key: '' };

export class ProvidersView extends Component {
  state = { data: null, error: null, errors: {}, busy: null, form: EMPTY_FORM, tested: {}, added: null, keys: null };

  componentDidMount() {
    this.load();
  }

  async load() {
    try {
      const providers = await get('/v1/providers');
      this.setState({ error: null, data: providers.data });
    } catch (err) {
      this.setState({ error: loadError(err) });
    }
  }

  field = (name) => (e) => this.setState({ form: { ...this.state.form, [name]: e.currentTarget.value } });

  add = async (event) => {
    event.preventDefault();
    const { kind, id, baseUrl, name, key } = this.state.form;
    const info = kindOf(kind);
    const body = { kind };
    if (id.trim()) body.id = id.trim();
    if (baseUrl.trim() && info.url !== undefined) body.baseUrl = baseUrl.trim();
    if (name.trim()) body.displayName = name.trim();
    if (key && info.key !== 'none') body.credential = key;
    // The key leaves the page's state whatever the answer: a failed add is typed again.
    this.setState({ form: { ...this.state.form, key: '' } });
    const created = await attempt(this, 'add', () => api('POST', '/v1/providers', body));
    if (!created) return;
    this.setState({ form: EMPTY_FORM, added: created.id });
    await this.load();
  };

  setEnabled = async (p, enabled) => {
    if (await attempt(this, p.id, () => api('PATCH', `/v1/providers/${encodeURIComponent(p.id)}`, { enabled })))
      await this.load();
  };

  test = async (p) => {
    const result = await attempt(this, p.id, () =>
      api('POST', `/v1/providers/${encodeURIComponent(p.id)}/actions/test`),
    );
    if (result) this.setState({ tested: { ...this.state.tested, [p.id]: result } });
  };

  remove = async (p) => {
    if (await attempt(this, p.id, () => api('DELETE', `/v1/providers/${encodeURIComponent(p.id)}`))) {
      if (this.state.added === p.id) this.setState({ added: null });
      if (this.state.keys === p.id) this.setState({ keys: null });
      await this.load();
    }
  };

  render(_props, { data, error }) {
    return html`<section class="view providers" data-view-ready=${data ? 'true' : 'false'}>
      <div class="toolbar"><h2>Providers</h2>
        <button type="button" class="secondary" onClick=${() => this.load()}>Reload</button></div>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      ${data ? html`${this.list(data)} ${this.addForm()}` : !error && html`<p class="loading">Loading...</p>`}
    </section>`;
  }

  list(providers) {
    const { errors, busy, tested, added, keys } = this.state;
    if (providers.length === 0)
      return html`<p class="empty" data-empty="providers">No providers yet. Add one below: a hosted API (OpenAI,
        Anthropic, OpenRouter) with its key, or a server on this machine (Ollama, llama-server, any
        OpenAI-compatible server).</p>`;
    return html`<div class="scroll"><table class="list" data-chart="provider-list">
      <thead><tr><th>Provider</th><th>Kind</th><th>Address</th><th>Keys</th><th>Enabled</th><th></th></tr></thead>
      <tbody>
        ${providers.map((p) => {
          const t = tested[p.id];
          const takesKeys = kindOf(p.kind).key !== 'none';
          return html`<tr data-provider=${p.id} data-enabled=${String(p.enabled)}
            data-key=${p.credentialConfigured ? 'stored' : 'none'}>
            <td>${p.displayName ?? p.id} <span class="muted">${p.id}</span>${' '}
              ${added === p.id && html`<span class="badge ok">added</span>`}
              ${inlineError(errors[p.id])}
              ${
                t &&
                html`<p class=${t.ok ? 'ok small' : 'error small'} data-tested=${String(t.ok)}>${
                  t.ok
                    ? `It answers: ${t.modelCount} models listed in ${t.latencyMs} ms.`
                    : `It did not answer as expected: ${t.error?.message ?? t.error?.code ?? 'unknown error'}`
                }</p>`
              }</td>
            <td>${kindOf(p.kind).label}</td>
            <td class="muted small">${p.baseUrl ?? ''}</td>
            <td data-key-count=${p.credentials}>${
              p.credentials > 0 ? `${p.credentials} stored` : takesKeys ? 'none' : '-'
            }</td>
            <td><label class="switch">
              <input type="checkbox" checked=${p.enabled} data-action="enable" disabled=${busy === p.id}
                aria-label=${`${p.id} enabled`}
                onChange=${(e) => this.setEnabled(p, e.currentTarget.checked)} /> ${
                  p.enabled ? 'on' : 'off'
                }</label></td>
            <td><div class="actions">
              <button type="button" class="secondary" data-action="test" disabled=${busy === p.id}
                onClick=${() => this.test(p)}>Test</button>
              ${
                takesKeys &&
                html`<button type="button" class="secondary" data-action="keys" aria-expanded=${String(keys === p.id)}
                  onClick=${() => this.setState({ keys: keys === p.id ? null : p.id })}>Keys</button>`
              }
              <${ConfirmButton} label="Remove" action="remove" question=${`Remove ${p.id}?`} confirm="Yes, remove"
                disabled=${busy === p.id} onConfirm=${() => this.remove(p)} />
            </div></td>
          </tr>
          ${
            keys === p.id &&
            html`<tr class="detail" data-keys-of=${p.id}><td colspan="6">
              <${ProviderKeys} provider=${p} onChanged=${() => this.load()} />
            </td></tr>`
          }`;
        })}
      </tbody>
    </table></div>`;
  }

  addForm() {
    const { form, errors, busy } = this.state;
    const info = kindOf(form.kind);
    const defaultId = form.kind.replace(/_/g, '-');
    return html`<h3>Add a provider</h3>
      <form class="setup" data-form="add-provider" onSubmit=${this.add} autocomplete="off">
        <label for="p-kind">Kind</label>
        <select id="p-kind" value=${form.kind} onChange=${this.field('kind')}>
          ${KINDS.map((k) => html`<option value=${k.kind}>${k.label}</option>`)}
        </select>
        <label for="p-id">ID <span class="muted">(optional)</span></label>
        <input id="p-id" type="text" placeholder=${defaultId} value=${form.id} onInput=${this.field('id')}
          pattern="[a-z0-9][a-z0-9\\-]{0,62}" title="Lower-case letters, digits and dashes" spellcheck="false" />
        ${
          info.url !== undefined &&
          html`<label for="p-url">Base URL ${info.url ? html`<span class="muted">(optional)</span>` : ''}</label>
          <input id="p-url" type="url" value=${form.baseUrl}
            placeholder=${info.url ? `Default: ${info.url}` : 'the server\u2019s /v1 address'}
            required=${info.url === null} onInput=${this.field('baseUrl')} spellcheck="false" />
          ${info.hint && html`<p class="hint wide">${info.hint}</p>`}`
        }
        <label for="p-name">Name <span class="muted">(optional)</span></label>
        <input id="p-name" type="text" value=${form.name} onInput=${this.field('name')} />
        ${
          info.key !== 'none' &&
          html`<label for="p-key">API key ${
            info.key === 'optional' ? html`<span class="muted">(if it needs one)</span>` : ''
          }</label>
          <input id="p-key" type="password" autocomplete="off" spellcheck="false" value=${form.key}
            required=${info.key === 'required'} onInput=${this.field('key')} />
          <p class="hint wide">Stored in the vault and never shown again; the list says only how many are stored.</p>`
        }
        <div class="wide"><button type="submit" disabled=${busy === 'add'}>Add provider</button></div>
        <div class="wide">${inlineError(errors.add)}</div>
      </form>`;
  }
}
