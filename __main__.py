"""`python -m rollgym`: the command line."""

from rollgym.cli import main

if __name__ == "__main__":
    main()
