"""Pulumi components that build the environment spec the core decided (they never choose sizes).

``Environment`` (``environment.py``) is what stacks use; it builds the platform's component
through ``registry.py``, which maps each platform to its own package: ``aws/``
(``AwsGpuEnvironment``), ``gcp/`` (``GcpGpuEnvironment``, and the Google Cloud pieces TPUs share),
``tpu/`` (``TpuVmEnvironment``) and ``bare_metal/`` (``BareMetalEnvironment``). Every one of them
declares its outputs through ``outputs.EnvironmentComponent``. What more than one platform shares
sits at the top level: args and their checks (``args.py``), the boot script (``startup.py``),
access decisions (``network.py``), serving helpers (``serving.py``) and naming (``names.py``);
``program.py`` is the Pulumi program, ``graph.py`` its offline evaluation, ``node_verify.py``
verify on ``pulumi up``.
"""
