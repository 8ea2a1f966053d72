"""Pulumi components that build the environment spec the core decided (they never choose sizes).

``Environment`` is what stacks use; it picks ``TpuVmEnvironment``, ``AwsGpuEnvironment`` or
``GcpGpuEnvironment`` (or the bare-metal component) from the spec's platform.
"""
