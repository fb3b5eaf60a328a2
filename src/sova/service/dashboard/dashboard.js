// The dashboard: reads the manager's API every 2 s (the session cookie authenticates it) and draws
// hosts, their CPU over time, findings, plans with approve / reject / cancel (each asked for first), VFs,
// storage SLOs, VMs and the audit trail. Times are the API's wall-clock Unix times, shown as local dates,
// with a simulated cluster's own clock beside them where the API gives it (its sim_ fields).
"use strict";
const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777"];
const HOT = 0.8;

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child instanceof Node ? child : String(child ?? ""));
  return node;
}

async function api(path, options = {}) {
  const response = await fetch(path, { credentials: "same-origin", ...options });
  if (response.status === 401) { window.location = "/"; throw new Error("logged out"); }
  const body = await response.json();
  if (!response.ok) throw new Error(body.detail || response.statusText);
  return body;
}

function fill(id, rows) {
  const body = document.getElementById(id);
  body.replaceChildren(...rows);
}

function escaped(text) {
  return String(text).replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

function date(seconds) {
  return new Date(seconds * 1000).toLocaleString();
}

// a wall-clock time as a local date, and the simulated cluster's own time beside it where there is one
function when(wall, sim) {
  if (wall === null || wall === undefined) return "–";
  const shown = el("span", { class: "time", title: new Date(wall * 1000).toISOString() }, date(wall));
  if (sim === null || sim === undefined) return shown;
  return el("span", {}, shown, el("br"),
            el("span", { class: "sim", title: "the simulated cluster's own clock" }, `simulated ${date(sim)}`));
}

function percent(value) {
  if (value === null || value === undefined) return "–";
  const width = Math.max(1, Math.min(100, value * 100));
  return el("span", {}, el("span", { class: "bar" + (value > HOT ? " hot" : ""), style: `width:${width * 0.8}px` }),
            ` ${(value * 100).toFixed(0)} %`);
}

function drawChart(series) {
  const svg = document.getElementById("chart");
  const width = 800, height = 220, pad = 24;
  const times = series.times;
  const parts = [];
  for (const level of [0, 0.5, 1]) {
    const y = height - pad - level * (height - 2 * pad);
    parts.push(`<line x1="${pad}" x2="${width}" y1="${y}" y2="${y}" stroke="#e3e7eb"/>`);
    parts.push(`<text x="0" y="${y + 4}" font-size="10" fill="#52606d">${level * 100}%</text>`);
  }
  const legend = [];
  if (times.length > 1) {
    const t0 = times[0], span = times[times.length - 1] - t0 || 1;
    Object.entries(series.hosts).forEach(([host, values], i) => {
      const color = COLORS[i % COLORS.length];
      const points = values.map((v, k) => v === null ? null :
        `${pad + (times[k] - t0) / span * (width - pad)},${height - pad - Math.min(v, 1.2) * (height - 2 * pad)}`)
        .filter(Boolean).join(" ");
      parts.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${points}" data-host="${escaped(host)}"/>`);
      legend.push(el("span", { style: `color:${color}` }, `■ ${host}`));
    });
    const simulated = series.sim_times ?
      ` · ${Math.round(series.sim_times[series.sim_times.length - 1] - series.sim_times[0])} simulated s` : "";
    const label = `${date(t0)} – ${date(times[times.length - 1])} (${Math.round(span)} s${simulated})`;
    parts.push(`<text x="${pad}" y="${height - 4}" font-size="10" fill="#52606d">${escaped(label)}</text>`);
  }
  svg.innerHTML = parts.join("");
  document.getElementById("legend").replaceChildren(...legend);
}

// approve, reject or cancel a plan once the person said yes to a question naming it and its actions
async function decide(plan, verdict) {
  const note = document.getElementById("decision");
  const actions = plan.actions.map(describeAction).join("\n");
  if (!window.confirm(`${verdict[0].toUpperCase()}${verdict.slice(1)} plan ${plan.id} (${plan.policy})?\n\n${actions}`)) {
    note.textContent = `plan ${plan.id}: not ${verdict === "cancel" ? "cancelled" : verdict + "d"}, nothing sent`;
    return;
  }
  try {
    const answer = await api(`/api/v1/plans/${plan.id}/${verdict}`,
                             { method: "POST", headers: { "X-Sova-Dashboard": "1" } });
    note.textContent = `plan ${plan.id}: ${answer.state}`;
  } catch (err) {
    note.textContent = `plan ${plan.id}: ${err.message}`;
  }
  refresh();
}

function describeAction(action) {
  const { kind, ...fields } = action;
  return kind + " " + Object.entries(fields).filter(([k]) => !["reason", "policy"].includes(k))
    .map(([k, v]) => `${k}=${v}`).join(" ");
}

function forecastCell(plan) {
  // the plan's forecast (approve mode): with the plan against doing nothing, over its horizon
  const forecast = plan.forecast;
  if (!forecast) return el("td", { class: "forecast" }, "–");
  if (!forecast.answer) return el("td", { class: "forecast" }, `no forecast: ${forecast.error}`);
  const alternatives = forecast.answer.alternatives;
  const mine = alternatives[alternatives.length - 1], by = mine.forecast, change = mine.difference || {};
  const signed = value => (value >= 0 ? "+" : "-") + Math.abs(value).toFixed(0);
  const p95 = by.hottest_host_p95 === null ? "–" : `${(by.hottest_host_p95 * 100).toFixed(0)} %`;
  return el("td", { class: "forecast", title: mine.tradeoff || "" },
    `hot-host ${by.hot_host_seconds.toFixed(0)} s (${signed(change.hot_host_seconds || 0)} s) · ` +
    `hottest host p95 ${p95} · ${by.migrations} migration(s), ${by.migration_seconds.toFixed(1)} s · ` +
    `over ${forecast.horizon.toFixed(0)} s`);
}

let started = 0, drawn = 0;  // refreshes started, and the latest of them drawn: an older one ending later draws nothing

async function refresh() {
  const mine = ++started;
  try {
    const [health, hosts, vms, vfs, findings, pending, plans, series, profiles] = await Promise.all([
      api("/healthz"), api("/api/v1/hosts"), api("/api/v1/vms"), api("/api/v1/vfs"), api("/api/v1/findings"),
      api("/api/v1/plans?state=pending&limit=50"), api("/api/v1/plans?limit=60"),
      api("/api/v1/hosts/series?seconds=600"), api("/api/v1/profiles"),
    ]);
    const audit = await api("/api/v1/audit?limit=1").then(page =>
      api(`/api/v1/audit?limit=30&offset=${Math.max(0, page.total - 30)}`));
    const slos = await api("/api/v1/slos");
    const runs = await api("/api/v1/runs").catch(() => []);
    if (mine < drawn) return;
    drawn = mine;
    document.getElementById("summary").textContent =
      `profile ${profiles.running} (${profiles.mode}) · ${health.leader ? "leader" : "standby"} · ` +
      `${health.hosts_reporting} host(s) reporting · ${vms.length} VM(s) · updated ${new Date().toLocaleTimeString()}`;
    drawChart(series);
    fill("hosts", hosts.map(h => el("tr", { "data-host": h.name }, el("td", {}, h.name), el("td", {}, percent(h.cpu_utilization)),
      el("td", {}, h.vms), el("td", {}, `${h.vfs_used} / ${h.vfs_total}`),
      el("td", {}, h.report_age_s === null ? "–" : `${h.report_age_s.toFixed(1)} s ago`))));
    const notable = findings.filter(f => f.notable);
    fill("findings", notable.length ? notable.map(f => el("li", { "data-kind": f.kind }, `${f.kind}: ${f.text}`))
                                    : [el("li", {}, "nothing notable")]);
    fill("pending", pending.items.map(p => el("tr", { "data-plan": p.id }, el("td", {}, p.id),
      el("td", {}, when(p.created, p.sim_created)), el("td", {}, p.policy),
      el("td", {}, p.actions.map(describeAction).join("; ")),
      el("td", {}, p.actions.map(a => a.reason).filter(Boolean).join("; ")), forecastCell(p),
      el("td", {}, el("button", { class: "approve", onclick: () => decide(p, "approve") }, "approve"),
                   el("button", { class: "reject", onclick: () => decide(p, "reject") }, "reject")))));
    // each plan once: those waiting are in the table above, not again among the recent ones
    const waiting = new Set(pending.items.map(p => p.id));
    const recent = plans.items.filter(p => p.state !== "pending" && !waiting.has(p.id)).slice(0, 10);
    fill("plans", recent.map(p => el("tr", { "data-plan": p.id }, el("td", {}, p.id),
      el("td", { class: `state-${p.state}` }, p.state), el("td", {}, p.actions.map(describeAction).join("; ")),
      el("td", {}, p.decided_at === null ? "" :
        el("span", {}, p.decided_by ? `${p.decided_by}, ` : "", when(p.decided_at, p.sim_decided_at))),
      el("td", {}, p.state === "ongoing" ?
        el("button", { class: "cancel", onclick: () => decide(p, "cancel") }, "cancel") : ""))));
    fill("vfs", vfs.map(row => el("tr", {}, el("td", {}, row.host), el("td", {}, `${row.used} / ${row.total}`),
      el("td", {}, row.holders.join(", ")))));
    fill("vms", vms.map(v => el("tr", { "data-vm": v.name }, el("td", {}, v.name), el("td", {}, v.host),
      el("td", {}, v.vcpus), el("td", {}, v.cpu_cores === null ? "–" : v.cpu_cores.toFixed(2)),
      el("td", v.nic === "vnic" ? {} : { class: "vf" }, v.nic), el("td", {}, v.migrating ? "migrating" : ""))));
    const measured = (s, key, digits) => s.status === null || s.status[key] === null ? "–" : s.status[key].toFixed(digits);
    fill("slos", slos.map(s => el("tr", { "data-vm": s.vm }, el("td", {}, s.vm), el("td", {}, s.status ? s.status.host : "–"),
      el("td", {}, s.slo.throughput ? `${s.slo.throughput[0]}–${s.slo.throughput[1]} IOPS` : "–"),
      el("td", {}, measured(s, "target", 0)), el("td", { class: "iops" }, measured(s, "throughput", 0)),
      el("td", { class: "sc" }, s.status && s.status.sc_rate !== null ? `${s.status.sc_rate.toFixed(1)} %` : "–"),
      el("td", {}, s.status && s.status.pf_ratio !== null ? `${s.status.pf_ratio.toFixed(1)} %` : "–"),
      el("td", {}, s.set_by, ", ", when(s.set_at)))));
    fill("runs", runs.slice(0, 10).map(r => el("tr", { "data-run": r.id },
      el("td", {}, when(r.submitted)), el("td", {}, r.scenario), el("td", {}, r.by),
      el("td", { class: `state-${r.state}` }, r.state),
      el("td", {}, r.progress ? `${Math.round(100 * r.progress.done / Math.max(1, r.progress.total))} %` : ""),
      el("td", {}, r.report ? el("a", { href: `/api/v1/runs/${r.id}/results/report.html` }, "report") :
                               (r.error ? r.error.slice(-120) : "")))));
    fill("audit", audit.items.reverse().map(e => el("tr", {}, el("td", {}, when(e.time, e.sim_time)), el("td", {}, e.plan),
      el("td", {}, e.event), el("td", {}, e.action), el("td", {}, e.status), el("td", {}, e.message || e.reason))));
  } catch (err) {
    document.getElementById("summary").textContent = `cannot reach the manager: ${err.message}`;
  }
}

refresh();
setInterval(refresh, 2000);
