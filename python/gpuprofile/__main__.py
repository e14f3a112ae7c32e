import sys

from gpuprofile.cli import main

sys.exit(main())
