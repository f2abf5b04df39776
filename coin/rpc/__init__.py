"""The JSON-RPC server: protocol core, method registry, authentication, web resources.

``jsonrpc`` (envelope, batches, limits, warm-up) and ``registry`` (methods, arguments,
help, entry-point discovery) know nothing of HTTP; ``auth`` holds credentials and access
policy; ``resource`` is the twisted.web face. See doc/rpc.md.
"""
