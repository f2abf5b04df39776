"""Read-only front ends: RPC and REST served from a writer's committed chain database.

A front end (``coind -frontend -writer=URL``, or one of a node's ``-rpcworkers``) opens the
writer's chain database and block files read-only, follows the writer's commits, answers
the read-only methods and REST paths itself and forwards everything else to the writer.
See doc/frontend.md.
"""
