import sys

from gymjax.cli import main

sys.exit(main())
