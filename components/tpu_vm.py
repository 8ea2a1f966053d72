"""Where stacks deployed before the per-platform packages find their queued slice's provider.

A dynamic resource's state holds its provider pickled *by reference* (dill records
``components.tpu_vm.TpuQueuedResourceProvider``), and ``pulumi destroy`` and ``pulumi refresh``
unpickle the provider stored in the state, not the program's. This name keeps resolving to the
provider, now in ``components.tpu.queued``; every ``pulumi up`` stores the new path. Remove it once
every stack with a queued TPU slice has been updated (as one removes an alias).
"""

from components.tpu.queued import TpuQueuedResourceProvider

__all__ = ["TpuQueuedResourceProvider"]
