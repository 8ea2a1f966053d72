"""${PROJECT}: a fullserver environment (stack config -> fullserver's sizing -> its components).

The program is fullserver's own (``components.program``, installed from requirements.txt), so
this project plans, prices and builds exactly what ``fullserver plan`` shows. Configuration is
read from the ``fullserver:`` keys of the stack (``pulumi config set fullserver:<key> <value>``).
"""

from components.program import main

main()
