"""The fullserver Pulumi program (``pulumi up -s <env>``): stack config -> sizing -> Environment.

Everything lives in ``components.program`` so ``fullserver plan`` and the tests evaluate the
same code under Pulumi's mock runtime.
"""

from components.program import main

main()
