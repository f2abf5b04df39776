"""A third-party RPC plugin: `hello [name]` and the chain height it sees."""

from coin.rpc.registry import STR, Arg, rpc_method


@rpc_method("hello", category="hello", args=[Arg("name", STR, default="world")],
            help="Greet someone, with the node's block count.")
def hello(ctx, name):
    return {"greeting": "hello, %s" % name, "blocks": ctx.node.chain.state.height}


METHODS = [hello]
