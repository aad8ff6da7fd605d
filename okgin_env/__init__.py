"""okgin: Oklahoma Gin as a reinforcement-learning environment."""
from .rules.cards import card_id, card_str
from .rules.melds import best_melds, deadwood
