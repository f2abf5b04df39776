// Small DOM helpers: elements without innerHTML (no markup from data), tables, messages and
// modal dialogs (native <dialog>: focus stays inside, Escape cancels, Enter submits).

import { describe } from "./api.js";

/** An element: h("button", {class: "x", onclick: f, type: "button"}, "text", child...). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value);
    } else if (key === "class") {
      el.className = value;
    } else if (key in el && typeof value !== "string") {
      el[key] = value;
    } else {
      el.setAttribute(key, value === true ? "" : value);
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replace an element's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** The element with this id (the page's fixed skeleton in index.html). */
export function $(id) {
  return document.getElementById(id);
}

/**
 * A table: columns [{label, cell(row) -> text|Node, num?}], rows; `empty` is shown as one
 * row when there are none. The caption names it for screen readers.
 */
export function table(caption, columns, rows, empty = "Nothing yet.") {
  const head = h("tr", {}, columns.map((c) => h("th", { scope: "col", class: c.num ? "num" : null }, c.label)));
  const body = rows.length
    ? rows.map((row) => h("tr", {}, columns.map((c) => h("td", { class: c.num ? "num" : null }, c.cell(row)))))
    : [h("tr", {}, h("td", { colspan: String(columns.length), class: "empty" }, empty))];
  return h("div", { class: "table-wrap" },
    h("table", {}, h("caption", { class: "visually-hidden" }, caption), h("thead", {}, head), h("tbody", {}, body)));
}

/** Show an error (words only) or clear it, in a message region (role=alert). */
export function showError(region, error) {
  region.classList.remove("ok");
  fill(region, error ? describe(error) : "");
  region.hidden = !error;
}

/** Show a success/info message in a message region. */
export function showOk(region, text) {
  region.classList.add("ok");
  fill(region, text);
  region.hidden = !text;
}

/** A date and time from Unix seconds, in the user's locale. */
export function when(seconds) {
  return seconds ? new Date(seconds * 1000).toLocaleString() : "";
}

let dialogCount = 0;

/**
 * A modal dialog with a form: `fields` are [{name, label, type?, value?, required?,
 * autocomplete?}] and `body` extra content. Resolves to the values by name, or null when
 * cancelled (button or Escape). `check(values)` may throw to keep it open with a message.
 */
export function dialog({ title, body = [], fields = [], ok = "OK", cancel = "Cancel", check = null }) {
  const id = "dlg" + ++dialogCount;
  const error = h("p", { class: "message", role: "alert", hidden: true });
  const inputs = fields.map((f) => {
    const input = h("input", {
      id: id + f.name, name: f.name, type: f.type || "text", value: f.value || "",
      required: f.required !== false, autocomplete: f.autocomplete || "off",
    });
    return [f, input];
  });
  const okButton = h("button", { type: "submit", value: "ok", class: "primary" }, ok);
  const form = h("form", { method: "dialog" },
    h("h2", { id: id + "title" }, title),
    body,
    inputs.map(([f, input]) => h("p", { class: "field" }, h("label", { for: input.id }, f.label), input)),
    error,
    h("p", { class: "buttons" },
      cancel ? h("button", { type: "button", value: "cancel", onclick: () => dlg.close("cancel") }, cancel) : null,
      okButton));
  const dlg = h("dialog", { "aria-labelledby": id + "title" }, form);
  document.body.append(dlg);
  return new Promise((resolve) => {
    form.addEventListener("submit", (event) => {
      const values = Object.fromEntries(inputs.map(([f, input]) => [f.name, input.value]));
      if (check) {
        try {
          check(values);
        } catch (e) {
          event.preventDefault();
          showError(error, e);
          return;
        }
      }
      dlg.returnValue = "ok";
    });
    dlg.addEventListener("close", () => {
      const values = Object.fromEntries(inputs.map(([f, input]) => [f.name, input.value]));
      dlg.remove();
      resolve(dlg.returnValue === "ok" ? values : null);
    });
    dlg.returnValue = "";
    dlg.showModal();
    (inputs.length ? inputs[0][1] : okButton).focus();
  });
}

/** Run `action` for a button: disabled while it runs, errors into `region`. */
export async function busy(button, region, action) {
  button.disabled = true;
  try {
    showError(region, null);
    return await action();
  } catch (e) {
    showError(region, e);
    return undefined;
  } finally {
    button.disabled = false;
  }
}
