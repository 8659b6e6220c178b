"""What the command-line programs run: matching lists of pairs, frame folders and video
(``correspond``), model export (``export``) and the argument parsing of all four programs
(``cli``).
"""
