"""What the MiniLM and MPNet studies share: the texts they embed (texts.py) and the
recipe-by-recipe comparison with paired bootstrap intervals (gap.py)."""
