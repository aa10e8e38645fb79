from gymjax.cli import run_program

run_program()
