// Governance: proposals (gobject list all proposals) with their votes, and vote buttons that
// vote with every masternode of masternode.conf (gobject vote-many <hash> funding <outcome>).

import { busy, fill, h, showError, showOk, table, when } from "../dom.js";
import { call } from "../api.js";
import { money } from "../state.js";

let els = null;

/** The proposal's fields from its DataString (an object, or Dash's [["proposal", {...}]]). */
function proposal(object) {
  try {
    let data = JSON.parse(object.DataString);
    if (Array.isArray(data)) data = data[0][1];
    return data || {};
  } catch (e) {
    return {};
  }
}

function voteButton(hash, outcome) {
  const button = h("button", { type: "button" }, "Vote " + outcome);
  button.addEventListener("click", () => busy(button, els.error, async () => {
    const answer = await call("gobject", ["vote-many", hash, "funding", outcome]);
    const failed = Object.entries(answer.detail || {}).filter(([, d]) => d.result !== "success");
    const text = [answer.overall, ...failed.map(([alias, d]) => alias + ": " + d.errorMessage)].join(" ");
    if (failed.length) showError(els.error, new Error(text));
    else showOk(els.error, text);
    await show();
  }));
  return button;
}

async function show() {
  try {
    const [objects, info] = await Promise.all([call("gobject", ["list", "all", "proposals"]),
      call("getgovernanceinfo")]);
    const rows = Object.values(objects).map((o) => ({ o, p: proposal(o) }))
      .sort((a, b) => b.o.CreationTime - a.o.CreationTime);
    fill(els.info, "Next superblock at height " + info.nextsuperblock + "; a proposal needs "
      + info.governanceminquorum + " net yes votes at least.");
    fill(els.list, table("Proposals", [
      { label: "Name", cell: ({ o, p }) => p.name || o.Hash.slice(0, 16) },
      { label: "Payment", num: true, cell: ({ p }) => (p.payment_amount !== undefined ? money(p.payment_amount) : "") },
      { label: "Address", cell: ({ p }) => h("span", { class: "mono" }, p.payment_address || "") },
      { label: "Ends", cell: ({ p }) => when(p.end_epoch) },
      { label: "Yes / No / Abstain", cell: ({ o }) => o.YesCount + " / " + o.NoCount + " / " + o.AbstainCount },
      { label: "Funded", cell: ({ o }) => (o.fCachedFunding ? "yes" : "no") },
      { label: "Vote", cell: ({ o }) => h("span", { class: "votes" }, ["yes", "no", "abstain"].map((v) => voteButton(o.Hash, v))) },
    ], rows, "No proposal yet (see doc/governance.md to submit one)."));
  } catch (e) {
    showError(els.error, e);
  }
}

export default {
  init(panel) {
    els = { error: h("p", { class: "message", role: "alert", hidden: true }), info: h("p", { class: "hint" }), list: h("div") };
    fill(panel, h("h2", {}, "Governance"), els.info, els.error, els.list);
  },
  show,
};
