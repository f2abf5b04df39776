// Transactions: the wallet's list filtered by type, date, address/label/txid text and minimum
// amount; details (gettransaction) with abandon and, where the node has it, bump fee; CSV
// export from the node (/api/transactions.csv, Qt's columns).

import { parseAmount, toBase } from "../amount.js";
import { dialog, fill, h, showError, showOk, table, when } from "../dom.js";
import { methods, money, state, unlockForSigning, walletCall } from "../state.js";

const TYPES = { all: "All", receive: "Received", send: "Sent", generate: "Mined", immature: "Immature",
  orphan: "Orphan" };
const DATES = { all: "All", today: "Today", week: "This week", month: "This month", year: "This year" };
let els = null;
let list = [];
/** Whether the message region shows the error of the last refresh. */
let loadFailed = false;

function since(range) {
  const now = new Date();
  const start = new Date(now.getFullYear(), now.getMonth(), now.getDate());
  if (range === "today") return start;
  if (range === "week") return new Date(start - ((start.getDay() + 6) % 7) * 86400000);
  if (range === "month") return new Date(now.getFullYear(), now.getMonth(), 1);
  if (range === "year") return new Date(now.getFullYear(), 0, 1);
  return null;
}

function filtered() {
  const type = els.type.value;
  const from = since(els.date.value);
  const text = els.search.value.trim().toLowerCase();
  let min = 0n;
  try {
    min = els.min.value.trim() ? parseAmount(els.min.value, state.unit) : 0n;
    els.min.removeAttribute("aria-invalid");
  } catch (e) {
    els.min.setAttribute("aria-invalid", "true");
  }
  return list.filter((t) => {
    if (type !== "all" && t.category !== type) return false;
    if (from && t.time * 1000 < from.getTime()) return false;
    if (text && ![t.address, t.label, t.txid].some((v) => v && v.toLowerCase().includes(text))) return false;
    const amount = toBase(t.amount);
    return (amount < 0n ? -amount : amount) >= min;
  });
}

function render() {
  const rows = filtered();
  fill(els.count, rows.length + " of " + list.length + " transactions");
  fill(els.list, table("Transactions", [
    { label: "Status", cell: (t) => (t.confirmations > 0 ? t.confirmations + " conf." : t.abandoned ? "abandoned"
      : "unconfirmed") },
    { label: "Date", cell: (t) => when(t.time) },
    { label: "Type", cell: (t) => TYPES[t.category] || t.category },
    { label: "Label / address", cell: (t) => (t.label ? t.label + " " : "") + (t.address || "") },
    { label: "Amount", num: true, cell: (t) => money(t.amount) },
    { label: "", cell: (t) => h("button", { type: "button", onclick: () => details(t.txid) }, "Details") },
  ], rows, list.length ? "No transaction matches the filter." : "No transactions yet."));
}

async function details(txid) {
  let tx;
  try {
    tx = await walletCall("gettransaction", [txid]);
  } catch (e) {
    showError(els.error, e);
    return;
  }
  const canAbandon = tx.confirmations <= 0 && !tx.abandoned;
  // Qt offers "Increase transaction fee" for the wallet's own unconfirmed BIP125 sends.
  const haveBump = (await methods()).includes("bumpfee");
  const canBump = haveBump && tx.confirmations === 0 && tx["bip125-replaceable"] === "yes"
    && !tx.replaced_by_txid && toBase(tx.amount) + toBase(tx.fee || 0) < 0n;
  let bump = false;
  const rows = [
    ["Status", tx.confirmations > 0 ? tx.confirmations + " confirmations" : "unconfirmed"],
    ["Date", when(tx.time)],
    ["Transaction ID", tx.txid],
    ["Amount", money(tx.amount)],
    tx.fee !== undefined ? ["Fee", money(tx.fee)] : null,
    tx.blockhash ? ["Block", tx.blockhash] : null,
    tx.replaced_by_txid ? ["Replaced by", tx.replaced_by_txid] : null,
    tx.replaces_txid ? ["Replaces", tx.replaces_txid] : null,
    ...(tx.details || []).map((d) => [TYPES[d.category] || d.category, money(d.amount) + " " + (d.address || "")]),
  ].filter(Boolean);
  const answer = await dialog({
    title: "Transaction details", ok: canAbandon ? "Abandon transaction" : "Close", cancel: canAbandon ? "Close" : null,
    body: [
      h("dl", { class: "details" }, rows.map(([k, v]) => [h("dt", {}, k), h("dd", { class: "mono" }, v)])),
      canBump ? h("p", {}, h("button", { type: "button", id: "tx-bump", onclick: (event) => {
        bump = true;
        event.target.closest("dialog").close("bump");
      } }, "Bump fee…")) : null,
      haveBump ? null : h("p", { class: "hint" }, "Bump fee: this node has no bumpfee method yet."),
    ],
  });
  try {
    if (bump) {
      await bumpFee(tx);
    } else if (answer !== null && canAbandon) {
      await walletCall("abandontransaction", [txid]);
      await load();
    }
  } catch (e) {
    showError(els.error, e);
  }
}

/** bumpfee after a confirmation, unlocking an encrypted wallet for the new signature. */
async function bumpFee(tx) {
  const ok = await dialog({
    title: "Bump fee", ok: "Bump fee", cancel: "Cancel",
    body: [h("p", {}, "Replace this transaction with one paying a higher fee (the wallet's estimate for its "
      + "confirmation target, at least the relay increment more), taken from its change. Current fee: ",
    h("strong", {}, money(-toBase(tx.fee))), ".")],
  });
  if (ok === null) return;
  const unlocked = await unlockForSigning("sign the replacement");
  let result;
  try {
    result = await walletCall("bumpfee", [tx.txid]);
  } finally {
    if (unlocked) await walletCall("walletlock");
  }
  await load();
  showOk(els.error, "Fee bumped from " + money(result.origfee) + " to " + money(result.fee)
    + ": replacement " + result.txid + (result.errors.length ? " (" + result.errors.join("; ") + ")" : ""));
}

async function load() {
  if (state.wallet === null) {
    list = [];
    fill(els.list, "No wallet is loaded: create or load one in Settings.");
    return;
  }
  list = (await walletCall("listtransactions", ["*", 100000, 0, true])).reverse();
  els.csv.href = "/api/transactions.csv?wallet=" + encodeURIComponent(state.wallet);
  render();
}

export default {
  init(panel) {
    const select = (id, options) => h("select", { id }, Object.entries(options).map(([v, t]) => h("option", { value: v }, t)));
    els = {
      error: h("p", { class: "message", role: "alert", hidden: true }),
      type: select("tx-type", TYPES),
      date: select("tx-date", DATES),
      search: h("input", { id: "tx-search", type: "search", autocomplete: "off" }),
      min: h("input", { id: "tx-min", inputmode: "decimal", autocomplete: "off" }),
      count: h("p", { class: "hint", "aria-live": "polite" }),
      list: h("div"),
      csv: h("a", { class: "button", href: "/api/transactions.csv", download: "transactions.csv", id: "tx-csv" },
        "Export CSV"),
    };
    for (const input of [els.type, els.date]) input.addEventListener("change", render);
    for (const input of [els.search, els.min]) input.addEventListener("input", render);
    fill(panel, h("h2", {}, "Transactions"),
      h("div", { class: "filters", role: "search" },
        h("p", { class: "field" }, h("label", { for: "tx-type" }, "Type"), els.type),
        h("p", { class: "field" }, h("label", { for: "tx-date" }, "Date"), els.date),
        h("p", { class: "field" }, h("label", { for: "tx-search" }, "Address, label or ID"), els.search),
        h("p", { class: "field" }, h("label", { for: "tx-min" }, "Minimum amount"), els.min),
        h("p", { class: "field" }, els.csv)),
      els.error, els.count, els.list);
  },

  async show() {
    // A refresh (the wallet event of a fee bump comes right after its answer) clears only
    // what a failed refresh showed, never the result of an action.
    try {
      await load();
      if (loadFailed) showError(els.error, null);
      loadFailed = false;
    } catch (e) {
      showError(els.error, e);
      loadFailed = true;
    }
  },
};
