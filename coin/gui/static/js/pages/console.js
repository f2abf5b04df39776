// Console: an RPC console like Qt's debug window: history (Up/Down), `help`, completion of
// method names (Tab, and the input's suggestion list), results as coin-cli prints them.
//
// Arguments are split at blanks, "quoted" or 'quoted' text is one string argument; an unquoted
// argument that reads as JSON other than a string (number, true, null, [..], {..}) is sent as
// that JSON value, anything else as a string (quote a label such as "123" to keep it text).

import { call, describe } from "../api.js";
import { fill, h } from "../dom.js";
import { methods, refreshWallets, state, walletLabel } from "../state.js";

const HISTORY_KEY = "coinqt.console";
const WALLET_METHODS = new Set(["createwallet", "loadwallet", "unloadwallet", "encryptwallet", "walletlock",
  "walletpassphrase"]);
let els = null;
let history = JSON.parse(localStorage.getItem(HISTORY_KEY) || "[]");
let position = history.length;

/** Split a command line into [method, params] (see the module's comment). */
export function parseCommand(line) {
  const tokens = [];
  const re = /"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g;
  let m;
  while ((m = re.exec(line)) !== null) {
    if (m[1] !== undefined) tokens.push({ text: m[1].replace(/\\(.)/g, "$1"), quoted: true });
    else if (m[2] !== undefined) tokens.push({ text: m[2], quoted: true });
    else tokens.push({ text: m[3], quoted: false });
  }
  if (!tokens.length) return null;
  const params = tokens.slice(1).map(({ text, quoted }) => {
    if (quoted) return text;
    try {
      const value = JSON.parse(text);
      return typeof value === "string" ? text : value;
    } catch (e) {
      return text;
    }
  });
  return [tokens[0].text, params];
}

function print(kind, text) {
  els.log.append(h("pre", { class: "entry " + kind }, text));
  els.log.scrollTop = els.log.scrollHeight;
}

/** What coin-cli prints for a result: strings bare, the rest as indented JSON. */
function formatResult(result) {
  if (typeof result === "string") return result;
  if (result === null) return "null";
  return JSON.stringify(result, null, 2);
}

async function run(line) {
  if (line.trim() === "clear") {
    els.log.replaceChildren();
    return;
  }
  const parsed = parseCommand(line);
  if (parsed === null) return;
  print("command", "> " + line);
  try {
    const result = await call(parsed[0], parsed[1], state.wallet);
    print("result", formatResult(result));
    if (WALLET_METHODS.has(parsed[0])) await refreshWallets();
  } catch (e) {
    print("error", describe(e));
  }
}

async function complete() {
  const text = els.input.value;
  if (/\s/.test(text)) return false;
  const names = (await methods()).filter((name) => name.startsWith(text));
  if (!names.length) return false;
  let prefix = names[0];
  for (const name of names) while (!name.startsWith(prefix)) prefix = prefix.slice(0, -1);
  els.input.value = names.length === 1 ? names[0] + " " : prefix;
  fill(els.hint, names.length === 1 ? "" : names.join("  "));
  return true;
}

function onKey(event) {
  if (event.key === "ArrowUp" && position > 0) {
    position -= 1;
    els.input.value = history[position];
    event.preventDefault();
  } else if (event.key === "ArrowDown" && position < history.length) {
    position += 1;
    els.input.value = position < history.length ? history[position] : "";
    event.preventDefault();
  } else if (event.key === "Tab" && !event.shiftKey && els.input.value && !/\s/.test(els.input.value)) {
    // Tab completes a method name; with nothing to complete it moves focus as usual.
    event.preventDefault();
    complete().then((done) => {
      if (!done) fill(els.hint, "No method starts with " + els.input.value);
    });
  } else if (event.key === "l" && event.ctrlKey) {
    event.preventDefault();
    els.log.replaceChildren();
  }
}

export default {
  init(panel) {
    els = {
      log: h("div", { class: "console-log", role: "log", "aria-live": "polite", "aria-label": "Console output",
        tabindex: "0" }),
      input: h("input", { id: "console-input", class: "mono", list: "console-methods", autocomplete: "off",
        spellcheck: "false", "aria-describedby": "console-hint" }),
      names: h("datalist", { id: "console-methods" }),
      hint: h("p", { id: "console-hint", class: "hint", "aria-live": "polite" }),
      wallet: h("p", { class: "hint" }),
    };
    const form = h("form", { class: "console-form" },
      h("label", { for: "console-input" }, "Command"), els.input,
      h("button", { type: "submit" }, "Run"));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const line = els.input.value;
      if (!line.trim()) return;
      history = history.filter((old) => old !== line).concat([line]).slice(-100);
      localStorage.setItem(HISTORY_KEY, JSON.stringify(history));
      position = history.length;
      els.input.value = "";
      fill(els.hint, "");
      await run(line);
    });
    els.input.addEventListener("keydown", onKey);
    fill(panel, h("h2", {}, "Console"),
      h("p", { class: "hint" }, "Type help for the list of commands, help <command> for one; Up and Down walk "
        + "the history, Tab completes a method name, Ctrl+L or clear empties the screen."),
      els.wallet, els.log, form, els.hint, els.names);
  },

  async show() {
    fill(els.wallet, "Wallet commands go to: " + (state.wallet === null ? "no wallet loaded" : walletLabel(state.wallet)));
    if (!els.names.childElementCount) {
      fill(els.names, (await methods()).map((name) => h("option", { value: name })));
    }
  },
};
