from fabriccheck.console import main

raise SystemExit(main())
