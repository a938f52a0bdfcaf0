"""Operations: one module per command family. They take a Project, do the work, return values;
they never print. The CLI renders what they return."""
