from benchmarks.sequences.run import main

raise SystemExit(main())
