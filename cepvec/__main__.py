from cepvec.cli import main

raise SystemExit(main())
