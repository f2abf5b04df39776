// What every page shares: the session, the selected wallet and unit, the last status event,
// and a small event bus ("status", "node", "wallets", "unit").

import { call } from "./api.js";
import { formatAmount, toBase } from "./amount.js";
import { dialog, h } from "./dom.js";

export const state = {
  session: null,
  wallet: null, // the selected wallet's name; null while none is loaded
  wallets: [],
  unit: localStorage.getItem("coinqt.unit") || "COIN",
  status: null,
  methods: null, // method names from `help`, for the console and for what exists
};

const bus = new EventTarget();

export function emit(name, detail = null) {
  bus.dispatchEvent(new CustomEvent(name, { detail }));
}

export function on(name, listener) {
  bus.addEventListener(name, (event) => listener(event.detail));
}

/** A call on the selected wallet. */
export function walletCall(method, params = []) {
  return call(method, params, state.wallet);
}

/** An RPC amount (number or string, COIN) or base units (BigInt) in the selected unit. */
export function money(value) {
  return formatAmount(typeof value === "bigint" ? value : toBase(value), state.unit);
}

/** Reload the wallet list; keep the selection while that wallet is loaded. */
export async function refreshWallets() {
  state.wallets = await call("listwallets");
  if (!state.wallets.includes(state.wallet)) {
    state.wallet = state.wallets.length ? state.wallets[0] : null;
  }
  emit("wallets");
}

/** Select a wallet by name (it must be loaded). */
export function selectWallet(name) {
  state.wallet = name;
  emit("wallets");
}

/** The RPC method names the node has (from `help`), fetched once. */
export async function methods() {
  if (state.methods === null) {
    const text = await call("help");
    state.methods = text.split("\n").filter((line) => line && !line.startsWith("==")).map((line) => line.split(" ")[0]);
  }
  return state.methods;
}

/** The wallet name as people read it ("" is the default wallet). */
export function walletLabel(name) {
  return name === "" ? "(default wallet)" : name;
}

/** Unlock the selected wallet for one signature if it is encrypted and locked: asks for the
 * passphrase (60 s). True when it unlocked it (the caller locks it again after signing). */
export async function unlockForSigning(purpose) {
  const info = await walletCall("getwalletinfo");
  if (info.unlocked_until === undefined || info.unlocked_until > 0) return false;
  const answer = await dialog({
    title: "Unlock wallet", ok: "Unlock",
    body: [h("p", {}, "The wallet is encrypted. Enter its passphrase to " + purpose + ".")],
    fields: [{ name: "passphrase", label: "Passphrase", type: "password", autocomplete: "current-password" }],
  });
  if (answer === null) throw new Error("Cancelled: the wallet stays locked");
  await walletCall("walletpassphrase", [answer.passphrase, 60]);
  return true;
}
