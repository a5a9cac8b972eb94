from fabriccheck.cli import main

raise SystemExit(main())
