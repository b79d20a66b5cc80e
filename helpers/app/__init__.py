"""What a notebook run talks to: the session, the setup checks and the headless notebook runner."""
