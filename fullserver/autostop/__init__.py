"""Idle autostop: VM nodes that stop themselves when their accelerators, sessions and keep marker
have been idle for the profile's (or the stack's) minutes, priced as such (docs/autostop.md).

``way`` is what a platform answers when asked how its nodes stop; ``plan`` decides a stack's
autostop and prices it beside always-on. The components install the agent (``components.
autostop_agent``, the program that runs on each node) with the stop command of their way.
"""
