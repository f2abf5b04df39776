// Settings: wallets (create, load, switch, unload), the selected wallet's security (encrypt,
// change passphrase, unlock, lock), backup, and node options that change at runtime.

import { call } from "../api.js";
import { formatDecimal, parseAmount, toBase, toRpc, unitByName } from "../amount.js";
import { busy, dialog, fill, h, showError, showOk, table } from "../dom.js";
import { refreshWallets, selectWallet, state, walletCall, walletLabel } from "../state.js";

let els = null;

/** A button that runs `action` and reports its outcome in the page's message region. */
function button(label, action, attrs = {}) {
  const b = h("button", { type: "button", ...attrs }, label);
  b.addEventListener("click", () => busy(b, els.message, async () => {
    const done = await action();
    if (typeof done === "string") showOk(els.message, done);
    await show();
  }));
  return b;
}

/** A one-field form (label, input, submit) whose submit runs `action(value)`. */
function oneField(id, label, submit, action, attrs = {}) {
  const input = h("input", { id, autocomplete: "off", required: true, ...attrs });
  const go = h("button", { type: "submit" }, submit);
  const form = h("form", { class: "inline-form" }, h("label", { for: id }, label), input, go);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    busy(go, els.message, async () => {
      const done = await action(input.value.trim());
      form.reset();
      if (typeof done === "string") showOk(els.message, done);
      await show();
    });
  });
  return form;
}

function samePassphrase(values) {
  if (values.passphrase !== values.repeat) throw new Error("The two passphrases differ");
  if (!values.passphrase) throw new Error("Enter a passphrase");
}

async function encrypt() {
  const answer = await dialog({
    title: "Encrypt wallet", ok: "Encrypt", check: samePassphrase,
    body: [h("p", {}, "Warning: if you lose the passphrase you lose your coins. Back up the wallet again "
      + "after encrypting it: older backups hold the old, unencrypted keys.")],
    fields: [{ name: "passphrase", label: "New passphrase", type: "password", autocomplete: "new-password" },
      { name: "repeat", label: "Repeat new passphrase", type: "password", autocomplete: "new-password" }],
  });
  if (answer === null) return null;
  return walletCall("encryptwallet", [answer.passphrase]);
}

async function changePassphrase() {
  const answer = await dialog({
    title: "Change passphrase", ok: "Change",
    check: (v) => samePassphrase({ passphrase: v.passphrase, repeat: v.repeat }),
    fields: [{ name: "old", label: "Current passphrase", type: "password", autocomplete: "current-password" },
      { name: "passphrase", label: "New passphrase", type: "password", autocomplete: "new-password" },
      { name: "repeat", label: "Repeat new passphrase", type: "password", autocomplete: "new-password" }],
  });
  if (answer === null) return null;
  await walletCall("walletpassphrasechange", [answer.old, answer.passphrase]);
  return "Passphrase changed";
}

async function unlock() {
  const answer = await dialog({
    title: "Unlock wallet", ok: "Unlock",
    check: (v) => {
      if (!/^\d+$/.test(v.minutes) || Number(v.minutes) < 1) throw new Error("Minutes: a whole number, 1 or more");
    },
    fields: [{ name: "passphrase", label: "Passphrase", type: "password", autocomplete: "current-password" },
      { name: "minutes", label: "Unlock for (minutes)", value: "10" }],
  });
  if (answer === null) return null;
  await walletCall("walletpassphrase", [answer.passphrase, Number(answer.minutes) * 60]);
  return "Wallet unlocked for " + answer.minutes + " minutes";
}

async function showSecurity() {
  if (state.wallet === null) {
    fill(els.security, "No wallet is loaded.");
    return;
  }
  const info = await walletCall("getwalletinfo");
  const encrypted = info.unlocked_until !== undefined;
  const locked = encrypted && info.unlocked_until === 0;
  fill(els.security,
    h("p", { id: "wallet-lock-state" }, walletLabel(state.wallet) + ": " + (!encrypted ? "not encrypted"
      : locked ? "encrypted, locked" : "encrypted, unlocked until " + new Date(info.unlocked_until * 1000).toLocaleTimeString())),
    h("p", { class: "buttons left" },
      encrypted ? null : button("Encrypt wallet…", encrypt),
      encrypted ? button("Change passphrase…", changePassphrase) : null,
      locked ? button("Unlock…", unlock) : null,
      encrypted && !locked ? button("Lock", async () => { await walletCall("walletlock"); return "Wallet locked"; }) : null));
  els.fee.value = formatDecimal(toBase(info.paytxfee), unitByName(state.unit).decimals);
  fill(els.feeUnit, state.unit + " per kB (0: estimate by target)");
}

async function show() {
  await refreshWallets();
  fill(els.wallets, table("Loaded wallets", [
    { label: "Wallet", cell: (name) => walletLabel(name) + (name === state.wallet ? " (selected)" : "") },
    { label: "", cell: (name) => h("span", { class: "buttons left" },
      name === state.wallet ? null : button("Switch to " + walletLabel(name), () => selectWallet(name)),
      button("Unload " + walletLabel(name), async () => {
        await call("unloadwallet", [name]);
        return "Unloaded " + walletLabel(name);
      })) },
  ], state.wallets, "No wallet is loaded."));
  const session = state.session;
  fill(els.rpc, session.server ? "JSON-RPC server: on, port " + session.rpcport
    : "JSON-RPC server: off (start coin-qt with -server, or server=1 in coin.conf)");
  const network = await call("getnetworkinfo");
  els.active.checked = network.networkactive;
  await showSecurity();
}

export default {
  init(panel) {
    els = {
      message: h("p", { class: "message", role: "alert", hidden: true }),
      wallets: h("div"),
      security: h("div"),
      active: h("input", { id: "set-network-active", type: "checkbox" }),
      fee: h("input", { id: "set-txfee", inputmode: "decimal", autocomplete: "off" }),
      feeUnit: h("span", { class: "unit" }),
      rpc: h("p", { id: "set-rpc" }),
    };
    els.active.addEventListener("change", () => busy(els.active, els.message, async () => {
      await call("setnetworkactive", [els.active.checked]);
      showOk(els.message, "Network activity " + (els.active.checked ? "enabled" : "disabled"));
    }));
    const feeButton = h("button", { type: "submit" }, "Set fee");
    const feeForm = h("form", { class: "inline-form" },
      h("label", { for: "set-txfee" }, "Wallet transaction fee"), els.fee, els.feeUnit, feeButton);
    feeForm.addEventListener("submit", (event) => {
      event.preventDefault();
      busy(feeButton, els.message, async () => {
        await walletCall("settxfee", [toRpc(parseAmount(els.fee.value, state.unit))]);
        showOk(els.message, "Transaction fee set");
      });
    });
    fill(panel, h("h2", {}, "Settings"), els.message,
      h("section", { "aria-labelledby": "set-wallets" }, h("h3", { id: "set-wallets" }, "Wallets"), els.wallets,
        oneField("set-create", "New wallet name", "Create wallet", async (name) => {
          const answer = await call("createwallet", [name]);
          await refreshWallets();
          selectWallet(answer.name);
          return "Created and selected " + walletLabel(answer.name) + (answer.warning ? " (" + answer.warning + ")" : "");
        }),
        oneField("set-load", "Wallet to load", "Load wallet", async (name) => {
          const answer = await call("loadwallet", [name]);
          await refreshWallets();
          selectWallet(answer.name);
          return "Loaded and selected " + walletLabel(answer.name);
        })),
      h("section", { "aria-labelledby": "set-security" }, h("h3", { id: "set-security" }, "Security"), els.security),
      h("section", { "aria-labelledby": "set-backup" }, h("h3", { id: "set-backup" }, "Backup"),
        oneField("set-backup-path", "Back up the selected wallet to (a path on the node's computer)", "Back up",
          async (path) => {
            await walletCall("backupwallet", [path]);
            return "Wallet backed up to " + path;
          })),
      h("section", { "aria-labelledby": "set-node" }, h("h3", { id: "set-node" }, "Node options"), els.rpc,
        h("p", { class: "check" }, els.active, h("label", { for: "set-network-active" }, "Network active (P2P connections)")),
        feeForm));
  },
  show,
};
