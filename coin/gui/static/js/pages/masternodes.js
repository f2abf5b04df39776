// Masternodes: "my masternodes" from masternode.conf (masternode list-conf) with start
// buttons, and the network's list (masternodelist full).

import { busy, fill, h, showError, showOk, table, when } from "../dom.js";
import { call } from "../api.js";
import { walletCall } from "../state.js";

let els = null;

/** masternodelist full's text: status protocol payee lastseen activeseconds lastpaidtime lastpaidblock addr. */
function parseFull(outpoint, text) {
  const [status, protocol, payee, lastseen, active, lastpaid, , addr] = text.trim().split(/\s+/);
  return { outpoint, status, protocol, payee, lastseen: Number(lastseen), active: Number(active),
    lastpaid: Number(lastpaid), addr };
}

function duration(seconds) {
  const days = Math.floor(seconds / 86400);
  const rest = new Date((seconds % 86400) * 1000).toISOString().slice(11, 19);
  return (days ? days + "d " : "") + rest;
}

function startButton(label, command, args, note) {
  const button = h("button", { type: "button" }, label);
  button.addEventListener("click", () => busy(button, els.error, async () => {
    const answer = await walletCall("masternode", [command, ...args]);
    const ok = answer.result === "successful" || (answer.overall && !/failed to start [1-9]/.test(answer.overall));
    const text = answer.overall || (answer.alias + ": " + answer.result + (answer.errorMessage ? ", " + answer.errorMessage : ""));
    if (ok) showOk(els.error, note + text);
    else showError(els.error, new Error(text));
    await show();
  }));
  return button;
}

async function show() {
  try {
    const [mine, network] = await Promise.all([call("masternode", ["list-conf"]), call("masternodelist", ["full"])]);
    fill(els.mine, table("My masternodes", [
      { label: "Alias", cell: (m) => m.alias },
      { label: "Address", cell: (m) => m.address },
      { label: "Collateral", cell: (m) => h("span", { class: "mono" }, m.txHash + ":" + m.outputIndex) },
      { label: "Status", cell: (m) => m.status },
      { label: "", cell: (m) => startButton("Start " + m.alias, "start-alias", [m.alias], "") },
    ], mine, "No masternode in masternode.conf (see doc/masternode.md)."));
    const rows = Object.entries(network).map(([outpoint, text]) => parseFull(outpoint, text));
    fill(els.network, table("Network masternodes", [
      { label: "Address", cell: (m) => m.addr },
      { label: "Protocol", num: true, cell: (m) => m.protocol },
      { label: "Status", cell: (m) => m.status },
      { label: "Active", num: true, cell: (m) => duration(m.active) },
      { label: "Last seen", cell: (m) => when(m.lastseen) },
      { label: "Payee", cell: (m) => h("span", { class: "mono" }, m.payee) },
    ], rows, "No masternode known."));
    fill(els.count, rows.length + " masternodes known");
  } catch (e) {
    showError(els.error, e);
  }
}

export default {
  init(panel) {
    els = {
      error: h("p", { class: "message", role: "alert", hidden: true }),
      mine: h("div"), network: h("div"), count: h("p", { class: "hint" }),
    };
    fill(panel, h("h2", {}, "Masternodes"), els.error,
      h("section", { "aria-labelledby": "mn-mine" }, h("h3", { id: "mn-mine" }, "My masternodes"),
        h("p", { class: "buttons left" },
          startButton("Start all", "start-all", [], ""), startButton("Start missing", "start-missing", [], "")),
        els.mine),
      h("section", { "aria-labelledby": "mn-network" }, h("h3", { id: "mn-network" }, "All masternodes"),
        els.count, els.network));
  },
  show,
};
