// Receive: a new address with label, amount and message as a payment URI and its QR code
// (drawn by the node: /api/qr.svg), and the history of receiving addresses.

import { parseAmount, toRpc } from "../amount.js";
import { busy, fill, h, showError, table } from "../dom.js";
import { money, state, walletCall } from "../state.js";

let els = null;

function paymentUri(address, amount, label, message) {
  const query = new URLSearchParams();
  if (amount !== null) query.set("amount", toRpc(amount));
  if (label) query.set("label", label);
  if (message) query.set("message", message);
  const text = query.toString().replace(/\+/g, "%20");
  return "coin:" + address + (text ? "?" + text : "");
}

function showRequest(address, amount, label, message) {
  const uri = paymentUri(address, amount, label, message);
  const copy = h("button", { type: "button" }, "Copy address");
  copy.addEventListener("click", () => navigator.clipboard.writeText(address).then(
    () => fill(copy, "Copied"), () => fill(copy, "Copy failed: select the address")));
  fill(els.request,
    h("h3", { id: "rc-request" }, "Payment request"),
    h("img", { class: "qr", alt: "QR code of " + uri, src: "/api/qr.svg?data=" + encodeURIComponent(uri),
      width: "240", height: "240" }),
    h("dl", { class: "request" },
      h("dt", {}, "Address"), h("dd", { class: "mono", id: "rc-address" }, address),
      h("dt", {}, "URI"), h("dd", { class: "mono" }, h("a", { href: uri }, uri)),
      amount !== null ? [h("dt", {}, "Amount"), h("dd", {}, money(amount))] : null,
      label ? [h("dt", {}, "Label"), h("dd", {}, label)] : null,
      message ? [h("dt", {}, "Message"), h("dd", {}, message)] : null),
    copy);
  els.request.hidden = false;
}

export default {
  init(panel) {
    els = {
      error: h("p", { class: "message", role: "alert", hidden: true }),
      label: h("input", { id: "rc-label", autocomplete: "off" }),
      amount: h("input", { id: "rc-amount", inputmode: "decimal", autocomplete: "off" }),
      unit: h("span", { class: "unit" }),
      message: h("input", { id: "rc-message", autocomplete: "off" }),
      request: h("section", { class: "request", "aria-labelledby": "rc-request", hidden: true }),
      history: h("div"),
    };
    const button = h("button", { type: "submit", class: "primary" }, "Request payment");
    const form = h("form", {},
      h("p", { class: "field" }, h("label", { for: "rc-label" }, "Label"), els.label),
      h("p", { class: "field" }, h("label", { for: "rc-amount" }, "Amount (optional)"), els.amount, els.unit),
      h("p", { class: "field" }, h("label", { for: "rc-message" }, "Message (optional)"), els.message),
      els.error,
      h("p", { class: "buttons" }, button));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      busy(button, els.error, async () => {
        if (state.wallet === null) throw new Error("No wallet is loaded: create or load one in Settings");
        const amount = els.amount.value.trim() ? parseAmount(els.amount.value, state.unit) : null;
        const label = els.label.value.trim();
        const address = await walletCall("getnewaddress", [label]);
        showRequest(address, amount, label, els.message.value.trim());
        form.reset();
        await this.show();
      });
    });
    fill(panel, h("h2", {}, "Receive"), form, els.request,
      h("section", { "aria-labelledby": "rc-history" }, h("h3", { id: "rc-history" }, "Requested payments history"),
        els.history));
  },

  async show() {
    fill(els.unit, state.unit);
    if (state.wallet === null) {
      fill(els.history, "No wallet is loaded: create or load one in Settings.");
      return;
    }
    try {
      const addresses = await walletCall("listreceivedbyaddress", [0, true]);
      const used = addresses.filter((a) => a.label || a.amount || (a.txids || []).length);
      fill(els.history, table("Receiving addresses", [
        { label: "Label", cell: (a) => a.label || "(no label)" },
        { label: "Address", cell: (a) => h("span", { class: "mono" }, a.address) },
        { label: "Received", num: true, cell: (a) => money(a.amount) },
        { label: "", cell: (a) => h("button", { type: "button", onclick: () => showRequest(a.address, null, a.label, "") },
          "Show") },
      ], used.reverse(), "No payment requested yet."));
      showError(els.error, null);
    } catch (e) {
      showError(els.error, e);
    }
  },
};
