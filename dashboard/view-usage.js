import { Component, h } from './preact.js';
import htm from './htm.js';
import { get, withQuery } from './api.js';
import { BarChart, DailyChart } from './chart.js';
import { addDays, dayOf, daysBetween, num, pct, pricedBy, usd } from './format.js';

const html = htm.bind(h);

const COUNTER_KEYS = [
  'requests',
  'failedRequests',
  'inputTokens',
  'outputTokens',
  'cachedInputTokens',
  'totalTokens',
  'costUsd',
];
const TOKENS = [
  { key: 'totalTokens', label: 'Tokens' },
  { key: 'requests', label: 'Requests' },
  { key: 'costUsd', label: 'Cost (USD)', format: usd },
];

/** Days without traffic are not in the API's answer: each day of the range gets a row, 0 when absent. */
export function zeroFill(from, to, data) {
  const byDay = new Map(data.map((r) => [r.day, r]));
  return daysBetween(from, to).map((day) => {
    const row = byDay.get(day);
    return Object.fromEntries([['day', day], ...COUNTER_KEYS.map((k) => [k, row?.[k] ?? 0])]);
  });
}

const RANGES = [7, 30, 90, 365];

export class UsageView extends Component {
  state = { days: 30, data: null, error: null };

  componentDidMount() {
    this.load();
  }

  async load() {
    const to = dayOf(new Date());
    const from = addDays(to, 1 - this.state.days);
    const q = (path, extra = {}) => get(withQuery(path, { from, to, ...extra }));
    try {
      const [summary, daily, providers, models, tokens, tools, routes, acceleration, tokenList] = await Promise.all([
        q('/v1/usage/summary'),
        q('/v1/usage/daily'),
        q('/v1/usage/breakdown', { groupBy: 'provider' }),
        q('/v1/usage/breakdown', { groupBy: 'model' }),
        q('/v1/usage/breakdown', { groupBy: 'token' }),
        q('/v1/usage/tools'),
        q('/v1/usage/routes'),
        q('/v1/usage/acceleration'),
        // Token names need an admin token; without one the IDs stay.
        get('/v1/tokens').catch(() => null),
      ]);
      this.setState({
        error: null,
        data: {
          from,
          to,
          summary,
          daily: zeroFill(daily.from, daily.to, daily.data),
          providers,
          models,
          tokens,
          tokenNames: tokenList ? new Map(tokenList.data.map((t) => [t.id, t.name])) : null,
          tools,
          routes,
          acceleration,
        },
      });
    } catch (err) {
      this.setState({ error: err.message });
    }
  }

  pick = (days) => this.setState({ days, data: null }, () => this.load());

  render(_props, { days, data, error }) {
    return html`<section class="view usage" data-view-ready=${data ? 'true' : 'false'}>
      <div class="toolbar">
        <h2>Usage</h2>
        <div class="range" role="group" aria-label="Range">
          ${RANGES.map(
            (n) => html`<button type="button" class=${n === days ? 'active' : 'secondary'} data-range=${n}
            onClick=${() => this.pick(n)}>${n} days</button>`,
          )}
        </div>
      </div>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      ${data ? this.body(data) : !error && html`<p class="loading">Loading...</p>`}
    </section>`;
  }

  body({ from, to, summary, daily, providers, models, tokens, tokenNames, tools, routes, acceleration }) {
    const t = summary.totals;
    const by = t.costEstimated ? pricedBy(t) : '';
    return html`
      <p class="range-text" data-from=${from} data-to=${to}>${from} to ${to}</p>
      <div class="tiles" data-chart="summary">
        <div class="tile" data-key="requests" data-value=${t.requests}><span>Requests</span>
          <strong>${num(t.requests)}</strong></div>
        <div class="tile" data-key="failedRequests" data-value=${t.failedRequests}><span>Failed</span>
          <strong>${num(t.failedRequests)}</strong></div>
        <div class="tile" data-key="totalTokens" data-value=${t.totalTokens}><span>Tokens</span>
          <strong>${num(t.totalTokens)}</strong></div>
        <div class="tile" data-key="costUsd" data-value=${t.costUsd ?? ''}>
          <span>Cost${t.costEstimated ? ' (estimated)' : ''}</span><strong>${usd(t.costUsd)}</strong>
          ${by && html`<span data-priced-by=${by}>priced by ${by}</span>`}</div>
        <div class="tile" data-key="toolCalls" data-value=${summary.toolCalls}><span>Tool calls</span>
          <strong>${num(summary.toolCalls)}</strong></div>
        <div class="tile" data-key="activeDays" data-value=${summary.activeDays}><span>Active days</span>
          <strong>${num(summary.activeDays)}</strong></div>
      </div>
      <h3>Per day</h3>
      <${DailyChart} name="daily" rows=${daily} series=${[
        { key: 'requests', label: 'Requests', color: '#2f6fdb' },
        { key: 'totalTokens', label: 'Tokens', color: '#d9822b' },
      ]} />
      <div class="grid">
        <${BarChart} name="by-provider" title="By provider" rows=${providers.data}
          keyOf=${(r) => r.providerId ?? '(none)'} columns=${TOKENS} />
        <${BarChart} name="by-model" title="By model" rows=${models.data}
          keyOf=${(r) => r.modelId ?? '(by response ID)'} columns=${TOKENS} />
        <${BarChart} name="by-token" title="By token" rows=${tokens.data} keyOf=${(r) => r.tokenId ?? '(none)'}
          labelOf=${(r) => tokenLabel(r.tokenId, tokenNames)} columns=${TOKENS} />
        <${BarChart} name="tools" title="Tools called" rows=${tools.data} keyOf=${(r) => r.name}
          columns=${[{ key: 'calls', label: 'Calls' }]} />
        <${BarChart} name="routes" title="Smart Route" rows=${routes.data}
          keyOf=${(r) =>
            `@route/${r.packSlug} ${r.routeId}${r.fallback ? ` (fallback: ${r.fallbackReason ?? '?'})` : ''}`}
          columns=${[
            { key: 'requests', label: 'Requests' },
            { key: 'totalTokens', label: 'Tokens' },
            { key: 'failedRequests', label: 'Failed' },
          ]} />
        <${BarChart} name="acceleration" title="Acceleration" rows=${acceleration.data}
          keyOf=${(r) => `${r.modelId ?? '?'} ${r.mode}${r.draftModelId ? ` (${r.draftModelId})` : ''}`}
          columns=${[
            { key: 'outputTokens', label: 'Output tokens' },
            { key: 'draftAcceptance', label: 'Draft accepted', format: pct },
            {
              key: 'speedup',
              label: 'Speed-up',
              format: (v) => (v === null || v === undefined ? '-' : `${v.toFixed(2)}x`),
            },
          ]} />
      </div>`;
  }
}

/** A token by its name; a revoked one (no longer listed) by its ID; the ID alone when names cannot be read. */
function tokenLabel(id, names) {
  if (!id) return '(none)';
  if (!names) return id;
  return names.get(id) ?? `${id} (revoked)`;
}
