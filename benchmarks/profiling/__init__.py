"""Where S1's and S2's time goes in the store: statements, threads, and the floor below them."""
