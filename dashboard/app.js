import { Component, h, render } from './preact.js';
import htm from './htm.js';
import { onUnauthorized, session } from './api.js';
import { SignIn } from './sign-in.js';
import { UsageView } from './view-usage.js';
import { GaugeView } from './view-gauge.js';
import { ModelsView } from './view-models.js';
import { HardwareView } from './view-hardware.js';
import { ProvidersView } from './view-providers.js';
import { TokensView } from './view-tokens.js';
import { GaugeSetupView } from './view-gauge-setup.js';
import { ServicesView } from './view-services.js';
import { LimitsView } from './view-limits.js';
import { RequestsView } from './view-requests.js';

const html = htm.bind(h);

const VIEWS = [
  { id: 'usage', label: 'Usage', view: UsageView },
  { id: 'gauge', label: 'Gauge', view: GaugeView },
  { id: 'gauge-setup', label: 'Gauge set-up', view: GaugeSetupView },
  { id: 'providers', label: 'Providers', view: ProvidersView },
  { id: 'models', label: 'Models', view: ModelsView },
  { id: 'tokens', label: 'Tokens', view: TokensView },
  { id: 'limits', label: 'Limits', view: LimitsView },
  { id: 'requests', label: 'Requests', view: RequestsView },
  { id: 'services', label: 'Services', view: ServicesView },
  { id: 'hardware', label: 'Runtime & hardware', view: HardwareView },
];

// The view is kept in the fragment (`#gauge`), which never reaches the server, so a reload stays put.
const viewFromHash = () => VIEWS.find((v) => `#${v.id}` === location.hash)?.id ?? 'usage';

class App extends Component {
  state = { token: session.token(), view: viewFromHash() };

  componentDidMount() {
    addEventListener('hashchange', this.onHash);
    onUnauthorized(this.signOut);
  }
  componentWillUnmount() {
    removeEventListener('hashchange', this.onHash);
  }
  onHash = () => this.setState({ view: viewFromHash() });

  signIn = (token) => {
    session.signIn(token);
    this.setState({ token });
  };
  signOut = () => {
    session.signOut();
    this.setState({ token: null });
  };
  render(_props, { token, view }) {
    if (!token) return html`<${SignIn} onToken=${this.signIn} />`;
    const current = VIEWS.find((v) => v.id === view);
    return html`<div class="shell">
      <header>
        <strong class="brand">Switchyard</strong>
        <nav>
          ${VIEWS.map(
            (v) => html`<a href=${`#${v.id}`} class=${v.id === view ? 'active' : ''}
            data-view=${v.id}>${v.label}</a>`,
          )}
        </nav>
        <button type="button" class="secondary" onClick=${this.signOut}>Sign out</button>
      </header>
      <main data-current-view=${view}><${current.view} key=${view} /></main>
    </div>`;
  }
}

// The placeholder goes first: render() adds to what the container holds.
const root = document.getElementById('app');
root.textContent = '';
render(html`<${App} />`, root);
