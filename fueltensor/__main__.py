"""`python -m fueltensor`: the same command line as the `fueltensor` script."""

from fueltensor.cli import main

raise SystemExit(main())
