"""Qt glue: QObjects moved to QThreads; commands in as *_requested signals, events out."""
