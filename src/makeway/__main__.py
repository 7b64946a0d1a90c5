from makeway.cli import main

main()
