// coin-qt's page: tabs (WAI-ARIA tabs pattern), the header's wallet and unit selectors, the
// footer's status line, and the WebSocket's events handed to the page on show.

import { getSession, listen } from "./api.js";
import { UNITS } from "./amount.js";
import { $, fill, h, showError } from "./dom.js";
import { emit, on, refreshWallets, selectWallet, state, walletLabel } from "./state.js";
import overview from "./pages/overview.js";
import send from "./pages/send.js";
import receive from "./pages/receive.js";
import transactions from "./pages/transactions.js";
import masternodes from "./pages/masternodes.js";
import governance from "./pages/governance.js";
import peers from "./pages/peers.js";
import consolePage from "./pages/console.js";
import settings from "./pages/settings.js";

const PAGES = { overview, send, receive, transactions, masternodes, governance, peers, console: consolePage, settings };
const tabs = () => Array.from(document.querySelectorAll('[role="tab"]'));
let current = null;
let pending = null;

/** Show page `name`, select its tab (roving tabindex) and let it refresh. */
function select(name, focus = false) {
  if (!(name in PAGES)) name = "overview";
  for (const tab of tabs()) {
    const selected = tab.id === "tab-" + name;
    tab.setAttribute("aria-selected", String(selected));
    tab.tabIndex = selected ? 0 : -1;
    $(tab.getAttribute("aria-controls")).hidden = !selected;
    if (selected && focus) tab.focus();
  }
  current = name;
  if (location.hash !== "#" + name) history.replaceState(null, "", "#" + name);
  refresh();
}

/**
 * Refresh the visible page soon; events arriving in a burst (generate 100) make one refresh.
 * The panel is aria-busy until the page has shown what it fetched.
 */
function refresh() {
  $("page-" + current).setAttribute("aria-busy", "true");
  if (pending !== null) return;
  pending = setTimeout(() => {
    pending = null;
    const panel = $("page-" + current);
    Promise.resolve(PAGES[current].show())
      .catch((e) => showError($("app-error"), e))
      .finally(() => panel.removeAttribute("aria-busy"));
  }, 50);
}

function onTabKey(event) {
  const list = tabs();
  const index = list.indexOf(event.target);
  if (index < 0) return;
  const moves = { ArrowRight: index + 1, ArrowLeft: index - 1, Home: 0, End: list.length - 1 };
  if (!(event.key in moves)) return;
  event.preventDefault();
  const next = list[(moves[event.key] + list.length) % list.length];
  select(next.id.slice(4), true);
}

function showStatus(status) {
  const left = Math.max(0, status.headers - status.blocks);
  fill($("status-sync"), status.ibd && left > 0
    ? "Synchronizing: " + left + " blocks left (" + (status.progress * 100).toFixed(2) + "%)"
    : "Block " + status.blocks + (status.ibd ? " (initial block download)" : ""));
  fill($("status-peers"), status.peers + " peers (" + status.connections_in + " in, " + status.connections_out + " out)");
  const locked = status.locked ? status.locked[state.wallet] : undefined;
  fill($("status-lock"), state.wallet === null ? "No wallet loaded"
    : locked === true ? "Wallet locked" : locked === false ? "Wallet unlocked" : "Wallet not encrypted");
  $("status-lock").dataset.state = locked === true ? "locked" : "open";
}

function fillWalletSelect() {
  const select = $("wallet-select");
  fill(select, state.wallets.length
    ? state.wallets.map((name) => h("option", { value: name, selected: name === state.wallet }, walletLabel(name)))
    : h("option", { value: "" }, "No wallet loaded"));
  select.disabled = !state.wallets.length;
  if (state.status) showStatus(state.status);
}

async function main() {
  for (const [name, page] of Object.entries(PAGES)) page.init($("page-" + name));
  for (const tab of tabs()) {
    tab.addEventListener("click", () => select(tab.id.slice(4)));
  }
  $("tablist").addEventListener("keydown", onTabKey);
  window.addEventListener("hashchange", () => select(location.hash.slice(1)));

  fill($("unit-select"), UNITS.map((u) => h("option", { value: u.name, selected: u.name === state.unit }, u.name)));
  $("unit-select").addEventListener("change", (event) => {
    state.unit = event.target.value;
    localStorage.setItem("coinqt.unit", state.unit);
    emit("unit");
    refresh();
  });
  $("wallet-select").addEventListener("change", (event) => {
    selectWallet(event.target.value);
    refresh();
  });
  on("wallets", fillWalletSelect);

  try {
    state.session = await getSession();
    fill($("network"), state.session.network);
    document.title = "coin-qt - " + state.session.network;
    await refreshWallets();
  } catch (e) {
    showError($("app-error"), e);
    return;
  }
  listen((event) => {
    if (event.event === "status") {
      state.status = event;
      const names = Object.keys(event.locked || {}).sort();
      if (names.join("\n") !== [...state.wallets].sort().join("\n")) {
        refreshWallets().catch((e) => showError($("app-error"), e));
      }
      showStatus(event);
      emit("status", event);
      return;
    }
    emit("node", event);
    refresh();
  }, (open) => {
    const live = $("status-live");
    fill(live, open ? "Live" : "Disconnected, reconnecting…");
    live.dataset.state = open ? "open" : "closed";
    if (open) refresh();
  });
  select(location.hash.slice(1) || "overview");
}

main();
