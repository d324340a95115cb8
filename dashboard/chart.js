import { Component, h } from './preact.js';
import htm from './htm.js';
import uPlot from './uplot.js';
import { num, parseDay } from './format.js';

const html = htm.bind(h);

/**
 * A uPlot line chart of one value per day, its numbers in a table beside it (`data-*` attributes carry the
 * exact figures, so what is drawn can be checked against the API). `series` is [{label, key, color}].
 */
export class DailyChart extends Component {
  componentDidMount() {
    this.draw();
  }
  componentDidUpdate(prev) {
    if (prev.rows !== this.props.rows) this.draw();
  }
  componentWillUnmount() {
    this.plot?.destroy();
  }
  draw() {
    this.plot?.destroy();
    const { rows, series } = this.props;
    const data = [rows.map((r) => parseDay(r.day).getTime() / 1000), ...series.map((s) => rows.map((r) => r[s.key]))];
    const width = Math.max(320, Math.min(this.plotHost.parentElement.clientWidth - 24, 1200));
    this.plot = new uPlot(
      {
        width,
        height: 220,
        scales: { x: { time: true } },
        axes: [
          {},
          { scale: series[0].key, values: (_u, ticks) => ticks.map(num), size: 70 },
          ...series.slice(1).map((s) => ({
            scale: s.key,
            side: 1,
            grid: { show: false },
            values: (_u, ticks) => ticks.map(num),
            size: 80,
          })),
        ],
        series: [
          {},
          ...series.map((s) => ({
            label: s.label,
            scale: s.key,
            stroke: s.color,
            width: 2,
            points: { show: rows.length <= 60 },
          })),
        ],
      },
      data,
      this.plotHost,
    );
  }
  render({ name, rows, series }) {
    return html`<figure class="chart" data-chart=${name}>
      <div class="plot" ref=${(el) => (this.plotHost = el)}></div>
      <details>
        <summary>Numbers</summary>
        <table class="numbers">
          <thead><tr><th>Day</th>${series.map((s) => html`<th>${s.label}</th>`)}</tr></thead>
          <tbody>
            ${rows.map(
              (r) => html`<tr
              data-day=${r.day} ...${Object.fromEntries(series.map((s) => [`data-${s.key}`, r[s.key]]))}>
              <td>${r.day}</td>${series.map((s) => html`<td class="n">${num(r[s.key])}</td>`)}
            </tr>`,
            )}
          </tbody>
        </table>
      </details>
    </figure>`;
  }
}

/**
 * Ranked rows as horizontal bars, each bar a share of the largest. `columns` are [{key, label, format}];
 * the first column sizes the bars. Each row carries `data-key` and `data-<column>` with the exact figures;
 * `labelOf` (default: the key) is what the row says.
 */
export function BarChart({ name, title, rows, keyOf, labelOf = keyOf, columns, empty = 'Nothing in this range.' }) {
  const [lead] = columns;
  const max = Math.max(0, ...rows.map((r) => r[lead.key] ?? 0));
  return html`<figure class="bars" data-chart=${name}>
    <figcaption>${title}</figcaption>
    ${
      rows.length === 0
        ? html`<p class="empty">${empty}</p>`
        : html`<table>
          <thead><tr><th></th>${columns.map((c) => html`<th>${c.label}</th>`)}</tr></thead>
          <tbody>
            ${rows.map((r) => {
              const key = keyOf(r);
              const share = max > 0 ? ((r[lead.key] ?? 0) / max) * 100 : 0;
              return html`<tr
                data-key=${key} ...${Object.fromEntries(columns.map((c) => [`data-${c.key}`, r[c.key] ?? '']))}>
                <td class="label"><span class="bar" style=${{ width: `${share.toFixed(1)}%` }}></span>
                  <span class="text">${labelOf(r)}</span></td>
                ${columns.map((c) => html`<td class="n">${(c.format ?? num)(r[c.key])}</td>`)}
              </tr>`;
            })}
          </tbody>
        </table>`
    }
  </figure>`;
}

/** A 0..1 share as a meter bar. */
export function Meter({ value, label }) {
  const v = Math.max(0, Math.min(1, value ?? 0));
  const level = v >= 0.9 ? 'high' : v >= 0.7 ? 'mid' : 'low';
  return html`<span class="meter ${level}" title=${label ?? ''}><span style=${{ width: `${(v * 100).toFixed(1)}%` }}>
    </span></span>`;
}
