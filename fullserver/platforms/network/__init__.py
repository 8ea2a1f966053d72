"""Each cloud's billed network beside its machines (``PlatformRules.network``): what it builds for
NAT, addresses and serving, and how it prices each from the network catalog. ``aws`` and ``gcp``
(the TPU VMs are billed Google Cloud's), ``kube`` the GKE and EKS load balancers; bare metal bills
none.
"""
