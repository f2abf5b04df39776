// Amounts as integer base units (BigInt): 1 COIN = 100,000,000 base units. No float maths.
//
// The JSON API hands amounts over as JSON numbers, which JSON.parse makes doubles. A double
// read back with toFixed(8) gives the exact 8-decimal text it came from for every amount up to
// MAX_MONEY (below 2^53 base units the nearest double is within half a unit of 1e-8), so that
// text is the only place a number becomes an amount; everything after is BigInt.
//
// The display units are powers of 1,000 (COIN, mCOIN, µCOIN), so one base unit is exactly the
// last decimal place of each: an amount in base units is the digits of its text in any unit,
// with the point `decimals` places from the right.

export const UNITS = [
  { name: "COIN", decimals: 8 },
  { name: "mCOIN", decimals: 5 },
  { name: "µCOIN", decimals: 2 },
];
const COIN_DECIMALS = 8;

export function unitByName(name) {
  return UNITS.find((u) => u.name === name) || UNITS[0];
}

/**
 * Base units of a decimal text written with at most `decimals` places.
 * Throws an Error whose message is for the user when the text is no amount.
 */
export function parseDecimal(text, decimals) {
  const m = /^\s*(-?)(\d*)(?:\.(\d*))?\s*$/.exec(String(text));
  if (!m || (m[2] === "" && !m[3])) {
    throw new Error("Invalid amount");
  }
  const frac = (m[3] || "").replace(/0+$/, "");
  if (frac.length > decimals) {
    throw new Error("Invalid amount: at most " + decimals + " decimal places in this unit");
  }
  const units = BigInt((m[2] || "0") + frac.padEnd(decimals, "0"));
  return m[1] === "-" ? -units : units;
}

/** Decimal text of `units` base units with the point `decimals` places from the right. */
export function formatDecimal(units, decimals) {
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString().padStart(decimals + 1, "0");
  const cut = digits.length - decimals;
  return (negative ? "-" : "") + digits.slice(0, cut) + (decimals ? "." + digits.slice(cut) : "");
}

/** Base units of an RPC amount (a JSON number or decimal string in COIN). */
export function toBase(value) {
  return parseDecimal(typeof value === "number" ? value.toFixed(COIN_DECIMALS) : value, COIN_DECIMALS);
}

/** The COIN decimal string the RPC takes for an amount (AMOUNT accepts numeric strings). */
export function toRpc(units) {
  return formatDecimal(units, COIN_DECIMALS);
}

/** Base units of a user's text in the named unit. */
export function parseAmount(text, unitName) {
  return parseDecimal(text, unitByName(unitName).decimals);
}

/** `units` in the named display unit, with the unit's name. */
export function formatAmount(units, unitName) {
  const unit = unitByName(unitName);
  return formatDecimal(units, unit.decimals) + " " + unit.name;
}
