// Overview: balances, recent transactions, sync progress (blocks left, ETA) and indicators.

import { $, fill, h, showError, table, when } from "../dom.js";
import { toBase } from "../amount.js";
import { money, on, state, walletCall } from "../state.js";

let els = null;
const samples = []; // [time ms, progress] while in IBD, for the ETA

function balanceRow(label, id) {
  return h("div", { class: "balance" }, h("dt", {}, label), h("dd", { id, class: "num" }, "…"));
}

function eta() {
  if (samples.length < 2) return "estimating…";
  const [t0, p0] = samples[0];
  const [t1, p1] = samples[samples.length - 1];
  if (p1 <= p0) return "estimating…";
  const seconds = ((1 - p1) * (t1 - t0)) / (p1 - p0) / 1000;
  if (seconds < 90) return Math.ceil(seconds) + " s";
  if (seconds < 5400) return Math.round(seconds / 60) + " min";
  return (seconds / 3600).toFixed(1) + " h";
}

function showSync(status) {
  const left = Math.max(0, status.headers - status.blocks);
  const syncing = status.ibd && left > 0;
  els.sync.hidden = !syncing;
  if (!syncing) {
    samples.length = 0;
    return;
  }
  samples.push([Date.now(), status.progress]);
  if (samples.length > 30) samples.shift();
  els.bar.value = status.progress;
  fill(els.syncText, left + " blocks left, " + (status.progress * 100).toFixed(2) + "% done, ETA " + eta());
}

function showIndicators(status) {
  const locked = status.locked ? status.locked[state.wallet] : undefined;
  fill(els.indicators,
    h("li", {}, "Network: " + (state.session ? state.session.network : "") + ", " + status.peers + " peers"),
    h("li", {}, "Blocks: " + status.blocks + (status.ibd ? " (initial block download)" : "")),
    h("li", {}, "Wallet: " + (state.wallet === null ? "none loaded"
      : locked === true ? "locked" : locked === false ? "unlocked" : "not encrypted")));
}

export default {
  init(panel) {
    els = {
      error: h("p", { class: "message", role: "alert", hidden: true }),
      sync: h("div", { class: "sync", hidden: true },
        h("label", { for: "sync-bar" }, "Synchronizing with the network"),
        h("progress", { id: "sync-bar", max: "1", value: "0" }),
        h("p", { id: "sync-text" })),
      indicators: h("ul", { class: "indicators", "aria-label": "Indicators" }),
      recent: h("div"),
    };
    els.bar = els.sync.querySelector("progress");
    els.syncText = els.sync.querySelector("#sync-text");
    fill(panel,
      h("h2", {}, "Overview"),
      els.error,
      els.sync,
      h("div", { class: "columns" },
        h("section", { "aria-labelledby": "ov-balances" },
          h("h3", { id: "ov-balances" }, "Balances"),
          h("dl", { class: "balances" },
            balanceRow("Available", "ov-available"),
            balanceRow("Pending", "ov-pending"),
            balanceRow("Immature", "ov-immature"),
            balanceRow("Total", "ov-total"))),
        h("section", { "aria-labelledby": "ov-status" },
          h("h3", { id: "ov-status" }, "Status"), els.indicators)),
      h("section", { "aria-labelledby": "ov-recent" }, h("h3", { id: "ov-recent" }, "Recent transactions"), els.recent));
    on("status", (status) => {
      showSync(status);
      showIndicators(status);
    });
  },

  async show() {
    if (state.status) showIndicators(state.status);
    if (state.wallet === null) {
      for (const id of ["ov-available", "ov-pending", "ov-immature", "ov-total"]) fill($(id), "no wallet");
      fill(els.recent, "No wallet is loaded: create or load one in Settings.");
      return;
    }
    try {
      const [info, recent] = await Promise.all([
        walletCall("getwalletinfo"), walletCall("listtransactions", ["*", 5, 0, true])]);
      const available = toBase(info.balance);
      const pending = toBase(info.unconfirmed_balance);
      const immature = toBase(info.immature_balance);
      fill($("ov-available"), money(available));
      fill($("ov-pending"), money(pending));
      fill($("ov-immature"), money(immature));
      fill($("ov-total"), money(available + pending + immature));
      fill(els.recent, table("Recent transactions", [
        { label: "Date", cell: (t) => when(t.time) },
        { label: "Type", cell: (t) => t.category },
        { label: "Address", cell: (t) => t.address || "" },
        { label: "Amount", num: true, cell: (t) => money(t.amount) },
      ], recent.reverse()));
      showError(els.error, null);
    } catch (e) {
      showError(els.error, e);
    }
  },
};
