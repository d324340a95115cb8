import { Component, h } from './preact.js';
import htm from './htm.js';
import { api, get } from './api.js';
import { attempt, ConfirmButton, inlineError, loadError } from './forms.js';

const html = htm.bind(h);

// One provider's keys (docs/api.md "Provider credentials"), under its row in the Providers view: each key's
// label, ID, weight, state and what the key pool knows of its headroom; add (label, weight, the key typed once
// into a password field and dropped from the page's state whatever the answer), enable or disable, remove.

const EMPTY_FORM = { label: '', weight: '1', key: '' };

/** `5/100 requests, 2000/90000 tokens`; null when the pool knows nothing. */
function headroomWords(c) {
  if (c.coolingUntil) return `cooling down until ${new Date(c.coolingUntil).toLocaleTimeString()}`;
  const parts = [];
  if (c.headroom?.requests) parts.push(`${c.headroom.requests.remaining}/${c.headroom.requests.limit} requests`);
  if (c.headroom?.tokens) parts.push(`${c.headroom.tokens.remaining}/${c.headroom.tokens.limit} tokens`);
  return parts.length > 0 ? parts.join(', ') : null;
}

export class ProviderKeys extends Component {
  state = { data: null, error: null, errors: {}, busy: null, form: EMPTY_FORM };

  componentDidMount() {
    this.load();
  }

  path = (id) =>
    `/v1/providers/${encodeURIComponent(this.props.provider.id)}/credentials${id ? `/${encodeURIComponent(id)}` : ''}`;

  async load() {
    try {
      this.setState({ error: null, data: (await get(this.path())).data });
    } catch (err) {
      this.setState({ error: loadError(err) });
    }
  }

  /** After a change: this list, and the provider's row (its key count). */
  async changed() {
    await this.load();
    this.props.onChanged();
  }

  field = (name) => (e) => this.setState({ form: { ...this.state.form, [name]: e.currentTarget.value } });

  add = async (event) => {
    event.preventDefault();
    const { label, weight, key } = this.state.form;
    const body = { label: label.trim(), credential: key, weight: Number(weight) };
    // The key leaves the page's state whatever the answer: a failed add is typed again.
    this.setState({ form: { ...this.state.form, key: '' } });
    if (await attempt(this, 'add', () => api('POST', this.path(), body))) {
      this.setState({ form: EMPTY_FORM });
      await this.changed();
    }
  };

  setEnabled = async (c, enabled) => {
    if (await attempt(this, c.id, () => api('PATCH', this.path(c.id), { enabled }))) await this.changed();
  };

  remove = async (c) => {
    if (await attempt(this, c.id, () => api('DELETE', this.path(c.id)))) await this.changed();
  };

  render({ provider }, { data, error }) {
    return html`<div class="keys" data-keys=${provider.id} data-keys-ready=${data ? 'true' : 'false'}>
      <h4>Keys of ${provider.displayName ?? provider.id}</h4>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      ${data && this.list(data)} ${data && this.addForm()}
    </div>`;
  }

  list(keys) {
    const { errors, busy } = this.state;
    if (keys.length === 0) return html`<p class="empty" data-empty="keys">No keys yet. Add one below.</p>`;
    return html`<table class="list" data-chart="key-list">
      <thead><tr><th>Label</th><th>Weight</th><th>State</th><th>Enabled</th><th></th></tr></thead>
      <tbody>
        ${keys.map((c) => {
          const headroom = headroomWords(c);
          return html`<tr data-key-id=${c.id} data-enabled=${String(c.enabled)} data-rejected=${String(c.rejected)}>
            <td>${c.label} <code class="muted small">${c.id}</code>${inlineError(errors[c.id])}</td>
            <td>${c.weight}</td>
            <td>${
              c.rejected
                ? html`<span class="badge exceeded" title=${`since ${c.rejectedAt}`}>refused by the provider</span>
                  <span class="muted small">Edit it to try it again.</span>`
                : !c.enabled
                  ? html`<span class="muted small">not used</span>`
                  : headroom
                    ? html`<span class="small">${headroom}</span>`
                    : html`<span class="muted small">ready</span>`
            }${c.sessions > 0 ? html` <span class="muted small">${c.sessions} sessions</span>` : ''}</td>
            <td><label class="switch">
              <input type="checkbox" checked=${c.enabled} data-action="enable-key" disabled=${busy === c.id}
                aria-label=${`${c.label} enabled`} onChange=${(e) => this.setEnabled(c, e.currentTarget.checked)} /> ${
                  c.enabled ? 'on' : 'off'
                }</label></td>
            <td><${ConfirmButton} label="Remove" action="remove-key" question=${`Remove the key ${c.label}?`}
              confirm="Yes, remove" disabled=${busy === c.id} onConfirm=${() => this.remove(c)} /></td>
          </tr>`;
        })}
      </tbody>
    </table>`;
  }

  addForm() {
    const { form, errors, busy } = this.state;
    const id = this.props.provider.id;
    return html`<form class="setup" data-form="add-key" onSubmit=${this.add} autocomplete="off">
      <label for=${`k-label-${id}`}>Label</label>
      <input id=${`k-label-${id}`} type="text" required maxlength="64" value=${form.label}
        placeholder="work account" onInput=${this.field('label')} />
      <label for=${`k-weight-${id}`}>Weight</label>
      <input id=${`k-weight-${id}`} type="number" required min="1" max="100" step="1" value=${form.weight}
        onInput=${this.field('weight')} />
      <label for=${`k-key-${id}`}>API key</label>
      <input id=${`k-key-${id}`} type="password" autocomplete="off" spellcheck="false" required value=${form.key}
        onInput=${this.field('key')} />
      <p class="hint wide">Stored in the vault and never shown again. The weight (1 to 100) is the key's share of
        the calls when the provider's keys have the same headroom.</p>
      <div class="wide"><button type="submit" disabled=${busy === 'add'}>Add key</button></div>
      <div class="wide">${inlineError(errors.add)}</div>
    </form>`;
  }
}
