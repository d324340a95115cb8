import { Component, h } from './preact.js';
import htm from './htm.js';
import { api, get } from './api.js';
import { familyWords } from './format.js';
import { AliasForm } from './models-setup.js';

const html = htm.bind(h);

// Providers (enable/disable) and catalog model records (hide, aliases). A write answers with the new record;
// the lists are read again after it so what is shown is what the service holds.
export class ModelsView extends Component {
  state = { data: null, error: null, filter: '', aliasDrafts: {} };

  componentDidMount() {
    this.load();
  }

  async load() {
    try {
      const [providers, models, discovery] = await Promise.all([
        get('/v1/providers'),
        get('/v1/catalog/models'),
        get('/v1/models'),
      ]);
      this.setState({
        error: null,
        data: { providers: providers.data, models: models.data, listed: new Set(discovery.data.map((m) => m.id)) },
      });
    } catch (err) {
      this.fail(err);
    }
  }

  fail(err) {
    this.setState({ error: err.message });
  }

  async write(method, path, body) {
    try {
      await api(method, path, body);
      await this.load();
      return true;
    } catch (err) {
      this.fail(err);
      return false;
    }
  }

  setProvider = (p, enabled) => this.write('PATCH', `/v1/providers/${encodeURIComponent(p.id)}`, { enabled });
  setHidden = (m, hidden) => this.write('PATCH', `/v1/catalog/models/${encodeURIComponent(m.id)}`, { hidden });

  saveAliases = async (event, m) => {
    event.preventDefault();
    const text = this.state.aliasDrafts[m.id] ?? m.aliases.join(', ');
    const aliases = [...new Set(text.split(/[\s,]+/).filter(Boolean))];
    if (await this.write('PATCH', `/v1/catalog/models/${encodeURIComponent(m.id)}`, { aliases })) {
      const { [m.id]: _done, ...rest } = this.state.aliasDrafts;
      this.setState({ aliasDrafts: rest });
    }
  };

  render(_props, { data, error }) {
    return html`<section class="view models" data-view-ready=${data ? 'true' : 'false'}>
      <div class="toolbar"><h2>Models</h2>
        <button type="button" class="secondary" onClick=${() => this.load()}>Reload</button></div>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      ${data ? this.body(data) : !error && html`<p class="loading">Loading...</p>`}
    </section>`;
  }

  body({ providers, models, listed }) {
    const { filter, aliasDrafts } = this.state;
    const shown = filter ? models.filter((m) => m.id.toLowerCase().includes(filter.toLowerCase())) : models;
    return html`
      <h3>Providers</h3>
      <p class="hint">Add, test or remove providers and their keys in <a href="#providers">Providers</a>.</p>
      <table class="list" data-chart="providers">
        <thead><tr><th>Provider</th><th>Kind</th><th>Address</th><th>Credential</th><th>Enabled</th></tr></thead>
        <tbody>
          ${providers.map(
            (p) => html`<tr data-provider=${p.id} data-enabled=${String(p.enabled)}>
            <td>${p.displayName ?? p.id} <span class="muted">${p.id}</span></td><td>${p.kind}</td>
              <td class="muted">${p.baseUrl ?? ''}</td>
            <td>${p.credentialConfigured ? 'stored' : '-'}</td>
            <td><label class="switch">
              <input type="checkbox" checked=${p.enabled} data-action="enable"
                onChange=${(e) => this.setProvider(p, e.currentTarget.checked)} /> ${p.enabled ? 'on' : 'off'}</label>
                </td>
          </tr>`,
          )}
        </tbody>
      </table>
      <div class="toolbar">
        <h3>Models</h3>
        <input type="search" placeholder="Filter" aria-label="Filter models" value=${filter}
          onInput=${(e) => this.setState({ filter: e.currentTarget.value })} />
      </div>
      ${
        models.length === 0 &&
        html`<p class="empty" data-empty="models">No models yet. Add a
        provider in <a href="#providers">Providers</a>: its models are listed here once it answers (Reload).</p>`
      }
      <div class="scroll"><table class="list" data-chart="models">
        <thead><tr><th>Model</th><th>Families</th><th>Source</th><th>Listed</th><th>Aliases</th><th>Hidden</th></tr>
          </thead>
        <tbody>
          ${shown.map(
            (m) => html`<tr data-model=${m.id} data-hidden=${String(m.hidden)}
            data-listed=${String(listed.has(m.id))}>
            <td>${
              m.displayName && m.displayName !== m.upstreamModelId ? html`${m.displayName} ` : ''
            }<code>${m.id}</code></td>
            <td class="small" title=${m.families.join(', ')}>${m.families.map(familyWords).join(', ')}</td>
            <td>${m.source}</td>
              <td>${listed.has(m.id) ? 'yes' : 'no'}</td>
            <td>
              <form class="inline" onSubmit=${(e) => this.saveAliases(e, m)}>
                <input type="text" aria-label=${`Aliases of ${m.id}`} data-action="aliases"
                  value=${aliasDrafts[m.id] ?? m.aliases.join(', ')}
                  onInput=${(e) => this.setState({ aliasDrafts: { ...aliasDrafts, [m.id]: e.currentTarget.value } })} />
                <button type="submit" class="secondary">Save</button>
              </form>
            </td>
            <td><label class="switch">
              <input type="checkbox" checked=${m.hidden} data-action="hide"
                onChange=${(e) => this.setHidden(m, e.currentTarget.checked)} /> ${
                  m.hidden ? 'hidden' : 'shown'
                }</label></td>
          </tr>`,
          )}
        </tbody>
      </table></div>
      <${AliasForm} models=${models.filter((m) => !m.hidden)} onDone=${() => this.load()} />`;
  }
}
