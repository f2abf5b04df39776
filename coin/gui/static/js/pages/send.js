// Send: several recipients (address checked as typed, labels from the address book), amounts
// in the selected unit, fee by target or custom rate, subtract fee; the transaction is funded
// first so the confirmation dialog shows the exact fee; an encrypted wallet is unlocked for the
// signature and locked again afterwards.

import { call } from "../api.js";
import { formatDecimal, parseAmount, toBase, toRpc, unitByName } from "../amount.js";
import { busy, dialog, fill, h, showError, showOk } from "../dom.js";
import { money, on, state, unlockForSigning, walletCall } from "../state.js";

const TARGETS = [2, 4, 6, 12, 24, 48, 144, 504, 1008];
let els = null;
let rows = [];
let serial = 0;

function unitName() {
  return state.unit;
}

/** Check the address with validateaddress as it is typed (the last answer wins). */
function watchAddress(row) {
  let asked = 0;
  row.address.addEventListener("input", async () => {
    const text = row.address.value.trim();
    const mine = ++asked;
    if (!text) {
      row.address.removeAttribute("aria-invalid");
      fill(row.hint, "");
      return;
    }
    try {
      const answer = await call("validateaddress", [text]);
      if (mine !== asked) return;
      row.address.setAttribute("aria-invalid", String(!answer.isvalid));
      fill(row.hint, answer.isvalid ? "Valid address" : "Not a valid address for this network");
      const known = els.book.querySelector('option[value="' + CSS.escape(text) + '"]');
      if (answer.isvalid && known && !row.label.value) row.label.value = known.label;
    } catch (e) {
      if (mine === asked) fill(row.hint, e.message);
    }
  });
}

function addRow() {
  const n = ++serial;
  const row = {
    address: h("input", { id: "send-address-" + n, class: "address", list: "address-book", autocomplete: "off",
      spellcheck: "false", "aria-describedby": "send-hint-" + n, required: true }),
    hint: h("span", { id: "send-hint-" + n, class: "hint", "aria-live": "polite" }),
    label: h("input", { id: "send-label-" + n, autocomplete: "off" }),
    amount: h("input", { id: "send-amount-" + n, class: "amount", inputmode: "decimal", autocomplete: "off",
      required: true }),
    unit: h("span", { class: "unit" }, unitName()),
    subtract: h("input", { id: "send-subtract-" + n, type: "checkbox" }),
  };
  row.el = h("fieldset", { class: "recipient" },
    h("legend", {}, "Recipient"),
    h("p", { class: "field" }, h("label", { for: row.address.id }, "Pay to"), row.address, row.hint),
    h("p", { class: "field" }, h("label", { for: row.label.id }, "Label"), row.label),
    h("p", { class: "field" }, h("label", { for: row.amount.id }, "Amount"), row.amount, row.unit),
    h("p", { class: "check" }, row.subtract, h("label", { for: row.subtract.id }, "Subtract fee from amount")),
    h("p", {}, h("button", { type: "button", onclick: () => removeRow(row) }, "Remove recipient")));
  watchAddress(row);
  rows.push(row);
  els.recipients.append(row.el);
  return row;
}

function removeRow(row) {
  if (rows.length === 1) return;
  rows = rows.filter((r) => r !== row);
  row.el.remove();
  rows[rows.length - 1].address.focus();
}

function resetRows() {
  for (const row of rows) row.el.remove();
  rows = [];
  addRow();
}

/** The fee choice as fundrawtransaction options. */
function feeOptions() {
  if (els.custom.checked) {
    const rate = parseAmount(els.rate.value, unitName());
    if (rate <= 0n) throw new Error("Enter a custom fee rate above zero");
    return { feeRate: toRpc(rate) };
  }
  return { conf_target: Number(els.target.value) };
}

/** fundrawtransaction's options: the fee choice and BIP125 opt-in (Qt's "Request Replace-By-Fee"). */
function fundOptions(subtract) {
  return { ...feeOptions(), subtractFeeFromOutputs: subtract, replaceable: els.rbf.checked };
}

async function showEstimate() {
  try {
    const answer = await call("estimatesmartfee", [Number(els.target.value)]);
    fill(els.estimate, answer.feerate !== undefined
      ? "Estimated " + money(answer.feerate) + " per kB (within " + answer.blocks + " blocks)"
      : "No estimate yet: the wallet's fallback fee is used");
  } catch (e) {
    fill(els.estimate, e.message);
  }
}

async function send() {
  if (state.wallet === null) throw new Error("No wallet is loaded: create or load one in Settings");
  const outputs = {};
  const subtract = [];
  const recipients = rows.map((row, index) => {
    const address = row.address.value.trim();
    if (!address) throw new Error("Recipient " + (index + 1) + ": enter an address");
    if (row.address.getAttribute("aria-invalid") === "true") {
      throw new Error("Recipient " + (index + 1) + ": not a valid address");
    }
    const amount = parseAmount(row.amount.value, unitName());
    if (amount <= 0n) throw new Error("Recipient " + (index + 1) + ": the amount must be above zero");
    if (address in outputs) throw new Error("Recipient " + (index + 1) + ": the same address is given twice");
    outputs[address] = toRpc(amount);
    if (row.subtract.checked) subtract.push(index);
    return { address, amount, label: row.label.value.trim(), subtract: row.subtract.checked };
  });
  const options = fundOptions(subtract);
  const raw = await call("createrawtransaction", [[], outputs]);
  const funded = await walletCall("fundrawtransaction", [raw, options]);
  const fee = toBase(funded.fee);
  const decoded = await call("decoderawtransaction", [funded.hex]);
  const paid = (r) => decoded.vout.filter((o) => (o.scriptPubKey.addresses || []).includes(r.address))
    .reduce((sum, o) => sum + toBase(o.value), 0n);
  const total = recipients.reduce((sum, r) => sum + paid(r), 0n) + fee;
  const ok = await dialog({
    title: "Confirm send", ok: "Send", cancel: "Cancel",
    body: [
      h("ul", { class: "confirm-list" }, recipients.map((r) => h("li", {},
        money(paid(r)) + " to " + (r.label ? r.label + " (" + r.address + ")" : r.address)))),
      h("p", {}, "Transaction fee: ", h("strong", { class: "fee" }, money(fee)),
        subtract.length ? " (subtracted from the marked amounts)" : ""),
      h("p", {}, "Total: ", h("strong", {}, money(total))),
    ],
  });
  if (ok === null) return null;
  const unlocked = await unlockForSigning("sign this transaction");
  try {
    const signed = await walletCall("signrawtransactionwithwallet", [funded.hex]);
    if (!signed.complete) throw new Error("The wallet could not sign every input");
    const txid = await call("sendrawtransaction", [signed.hex]);
    for (const r of recipients) {
      if (r.label) await walletCall("setlabel", [r.address, r.label]);
    }
    return txid;
  } finally {
    if (unlocked) await walletCall("walletlock");
  }
}

async function fillBook() {
  if (state.wallet === null) return;
  const mine = await walletCall("listreceivedbyaddress", [0, true]);
  const sent = await walletCall("listtransactions", ["*", 1000, 0, true]);
  const book = new Map();
  for (const t of sent) if (t.category === "send" && t.address && t.label) book.set(t.address, t.label);
  for (const a of mine) if (a.label) book.set(a.address, a.label + " (mine)");
  fill(els.book, [...book].map(([address, label]) => h("option", { value: address, label })));
}

export default {
  init(panel) {
    els = {
      error: h("p", { class: "message", role: "alert", hidden: true }),
      recipients: h("div", { class: "recipients" }),
      book: h("datalist", { id: "address-book" }),
      target: h("select", { id: "send-target" }, TARGETS.map((n) => h("option", { value: String(n), selected: n === 6 },
        n + " blocks"))),
      recommended: h("input", { id: "send-fee-target", type: "radio", name: "fee", checked: true }),
      custom: h("input", { id: "send-fee-custom", type: "radio", name: "fee" }),
      rate: h("input", { id: "send-fee-rate", inputmode: "decimal", autocomplete: "off",
        value: formatDecimal(10000n, unitByName(unitName()).decimals) }),
      rateUnit: h("span", { class: "unit" }),
      estimate: h("span", { class: "hint", "aria-live": "polite" }),
      rbf: h("input", { id: "send-rbf", type: "checkbox" }),
    };
    const sendButton = h("button", { type: "submit", class: "primary", id: "send-button" }, "Send");
    const form = h("form", { class: "send" },
      els.recipients,
      h("p", {}, h("button", { type: "button", onclick: () => addRow().address.focus() }, "Add recipient")),
      h("fieldset", { class: "fee" },
        h("legend", {}, "Transaction fee"),
        h("p", { class: "check" }, els.recommended, h("label", { for: els.recommended.id }, "Recommended, confirm within"),
          h("label", { for: els.target.id, class: "visually-hidden" }, "Confirmation target"), els.target, els.estimate),
        h("p", { class: "check" }, els.custom, h("label", { for: els.custom.id }, "Custom, per kB:"),
          h("label", { for: els.rate.id, class: "visually-hidden" }, "Custom fee per kB"), els.rate, els.rateUnit),
        h("p", { class: "check" }, els.rbf, h("label", { for: els.rbf.id },
          "Request Replace-By-Fee (the fee can be raised later with Bump fee)"))),
      els.error,
      h("p", { class: "buttons" },
        h("button", { type: "button", onclick: () => { resetRows(); showError(els.error, null); } }, "Clear all"),
        sendButton));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      busy(sendButton, els.error, async () => {
        const txid = await send();
        if (txid) {
          resetRows();
          showOk(els.error, "Sent: transaction " + txid);
        }
      });
    });
    els.target.addEventListener("change", showEstimate);
    fill(panel, h("h2", {}, "Send"), els.book, form);
    addRow();
    let shown = unitName();
    on("unit", () => {
      // What was typed keeps its value: rewritten in the new unit.
      for (const input of [...rows.map((r) => r.amount), els.rate]) {
        try {
          if (input.value.trim()) input.value = formatDecimal(parseAmount(input.value, shown), unitByName(unitName()).decimals);
        } catch (e) {
          // left as typed: send() reports it
        }
      }
      shown = unitName();
      fill(els.rateUnit, shown);
      for (const row of rows) fill(row.unit, shown);
    });
  },

  async show() {
    fill(els.rateUnit, unitName());
    for (const row of rows) fill(row.unit, unitName());
    await Promise.all([showEstimate(), fillBook().catch((e) => showError(els.error, e))]);
  },
};
