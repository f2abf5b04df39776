// The page's only ways to the node: the JSON API (POST /api/call) and the WebSocket (/ws).
// The CSRF token from /api/session lives in this module's memory only.

/** An error answer of an RPC method: code and message exactly as JSON-RPC gives them. */
export class RpcError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

let session = null;

/** The session (csrf, network, version, server, rpcport); fetched once. */
export async function getSession() {
  if (session === null) {
    const reply = await fetch("/api/session", { credentials: "same-origin" });
    if (!reply.ok) {
      throw new Error(reply.status === 401 || reply.status === 403
        ? "This page is not signed in: open the URL that coin-qt printed."
        : "coin-qt answered HTTP " + reply.status);
    }
    session = await reply.json();
  }
  return session;
}

/**
 * Call an RPC method in-process; resolves to its result, rejects with RpcError (the node's
 * code and message) or Error (the words for a transport failure).
 */
export async function call(method, params = [], wallet = null) {
  const { csrf } = await getSession();
  let reply;
  try {
    reply = await fetch("/api/call", {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-Coin-CSRF": csrf },
      body: JSON.stringify({ method, params, wallet }),
    });
  } catch (e) {
    throw new Error("coin-qt cannot be reached (is it still running?)");
  }
  let body = null;
  try {
    body = await reply.json();
  } catch (e) {
    throw new Error("coin-qt answered HTTP " + reply.status + " without a readable body");
  }
  if (body && body.error) {
    throw new RpcError(body.error.code, body.error.message);
  }
  if (!reply.ok) {
    throw new Error("coin-qt answered HTTP " + reply.status);
  }
  return body.result;
}

/** Words for any error of call(): the RPC message, never a stack trace. */
export function describe(error) {
  if (error instanceof RpcError) {
    return error.message + " (code " + error.code + ")";
  }
  return error && error.message ? error.message : String(error);
}

/**
 * Listen to the node's events; `onEvent(obj)` for each, `onState(open)` when the socket opens
 * or closes. Reconnects with a growing delay (at most 10 s) after a close.
 */
export function listen(onEvent, onState) {
  let delay = 500;
  const open = () => {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(scheme + "//" + location.host + "/ws");
    ws.addEventListener("open", () => {
      delay = 500;
      onState(true);
    });
    ws.addEventListener("message", (msg) => {
      let event;
      try {
        event = JSON.parse(msg.data);
      } catch (e) {
        return;
      }
      onEvent(event);
    });
    ws.addEventListener("close", () => {
      onState(false);
      setTimeout(open, delay);
      delay = Math.min(delay * 2, 10000);
    });
  };
  open();
}
