import sys

from jaxsched.cli.main import main

sys.exit(main())
