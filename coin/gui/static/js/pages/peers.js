// Peers and network: the peer table (ban a peer), the ban list (unban), and a traffic graph
// of getnettotals sampled every 2 s while the page is shown (Qt's network traffic tab).

import { busy, fill, h, showError, table, when } from "../dom.js";
import { call } from "../api.js";

const SAMPLES = 150; // 5 minutes at one sample per 2 s
const BAN_SECONDS = 86400; // Core's default -bantime
let els = null;
const traffic = []; // [time ms, totalbytesrecv, totalbytessent]

function bytes(n) {
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i += 1;
  }
  return (i ? n.toFixed(1) : String(n)) + " " + units[i];
}

function host(addr) {
  const m = /^\[(.*)\]:\d+$/.exec(addr) || /^(.*):\d+$/.exec(addr);
  return m ? m[1] : addr;
}

function action(label, run) {
  const button = h("button", { type: "button" }, label);
  button.addEventListener("click", () => busy(button, els.error, async () => {
    await run();
    await refresh();
  }));
  return button;
}

/** Rates (bytes/s) between samples, drawn as two lines on the canvas. */
function draw() {
  const canvas = els.graph;
  const ctx = canvas.getContext("2d");
  const width = canvas.width;
  const height = canvas.height;
  const styles = getComputedStyle(canvas);
  ctx.clearRect(0, 0, width, height);
  const rates = [];
  for (let i = 1; i < traffic.length; i++) {
    const seconds = (traffic[i][0] - traffic[i - 1][0]) / 1000 || 1;
    rates.push([(traffic[i][1] - traffic[i - 1][1]) / seconds, (traffic[i][2] - traffic[i - 1][2]) / seconds]);
  }
  const top = Math.max(1024, ...rates.flat());
  const line = (index, color) => {
    ctx.strokeStyle = color;
    ctx.lineWidth = 2;
    ctx.beginPath();
    rates.forEach((r, i) => {
      const x = width - (rates.length - 1 - i) * (width / (SAMPLES - 1));
      const y = height - (r[index] / top) * (height - 4) - 2;
      if (i === 0) ctx.moveTo(x, y);
      else ctx.lineTo(x, y);
    });
    ctx.stroke();
  };
  line(0, styles.getPropertyValue("--in").trim() || "green");
  line(1, styles.getPropertyValue("--out").trim() || "red");
  const last = rates[rates.length - 1] || [0, 0];
  fill(els.rates, "In: " + bytes(Math.round(last[0])) + "/s, out: " + bytes(Math.round(last[1])) + "/s (scale "
    + bytes(Math.round(top)) + "/s)");
}

async function sample() {
  const totals = await call("getnettotals");
  traffic.push([totals.timemillis, totals.totalbytesrecv, totals.totalbytessent]);
  if (traffic.length > SAMPLES) traffic.shift();
  fill(els.totals, "Received " + bytes(totals.totalbytesrecv) + ", sent " + bytes(totals.totalbytessent));
  draw();
}

async function refresh() {
  const [peers, banned] = await Promise.all([call("getpeerinfo"), call("listbanned")]);
  fill(els.peers, table("Peers", [
    { label: "ID", num: true, cell: (p) => p.id },
    { label: "Address", cell: (p) => p.addr },
    { label: "Direction", cell: (p) => (p.inbound ? "inbound" : "outbound") },
    { label: "User agent", cell: (p) => p.subver },
    { label: "Ping", num: true, cell: (p) => (p.pingtime !== undefined ? Math.round(p.pingtime * 1000) + " ms" : "") },
    { label: "Sent / received", num: true, cell: (p) => bytes(p.bytessent) + " / " + bytes(p.bytesrecv) },
    { label: "Height", num: true, cell: (p) => (p.synced_blocks >= 0 ? p.synced_blocks : "") },
    { label: "", cell: (p) => action("Ban " + host(p.addr), () => call("setban", [host(p.addr), "add", BAN_SECONDS])) },
  ], peers, "No peer connected."));
  fill(els.banned, table("Banned", [
    { label: "Subnet", cell: (b) => b.address },
    { label: "Banned until", cell: (b) => when(b.banned_until) },
    { label: "", cell: (b) => action("Unban " + b.address, () => call("setban", [b.address, "remove"])) },
  ], banned, "Nobody is banned."));
}

export default {
  init(panel) {
    els = {
      error: h("p", { class: "message", role: "alert", hidden: true }),
      peers: h("div"), banned: h("div"), totals: h("p"), rates: h("p", { class: "hint" }),
      graph: h("canvas", { class: "traffic", width: "600", height: "160", role: "img",
        "aria-label": "Network traffic: received and sent bytes per second over the last 5 minutes" }),
    };
    fill(panel, h("h2", {}, "Peers and network"), els.error,
      h("section", { "aria-labelledby": "pe-peers" }, h("h3", { id: "pe-peers" }, "Peers"), els.peers),
      h("section", { "aria-labelledby": "pe-banned" }, h("h3", { id: "pe-banned" }, "Banned peers"), els.banned),
      h("section", { "aria-labelledby": "pe-traffic" }, h("h3", { id: "pe-traffic" }, "Network traffic"),
        els.totals, els.graph, h("p", { class: "legend" }, h("span", { class: "in" }, "received"), " ",
          h("span", { class: "out" }, "sent")), els.rates));
    // Sample while the page is shown: its panel's hidden attribute says so.
    setInterval(() => {
      if (!panel.hidden) sample().catch((e) => showError(els.error, e));
    }, 2000);
  },

  async show() {
    try {
      await Promise.all([refresh(), sample()]);
      showError(els.error, null);
    } catch (e) {
      showError(els.error, e);
    }
  },
};
